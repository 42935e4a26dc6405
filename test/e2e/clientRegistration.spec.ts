import assert from "node:assert/strict";
import { decodeJwt, exportJWK, generateKeyPair } from "jose";
import * as oauth from "oauth4webapi";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, pkcePair, signIn } from "../support/browserless.js";
import { call, getJson, postJson, TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** Issue 43 §3: dynamic client registration (RFC 7591) and its management (RFC 7592). */
const REGISTER = "/api/oauth/register";
const REGISTRATION_TOKEN = "registration-token-0123456789abcdef-xyz";
const TOOLS = { uri: "https://tools.example.com/mcp", name: "Tools", scopes: [{ name: "mcp:tools", description: "Use the tools" }] };
const CALLBACK = "http://127.0.0.1:9999/callback";
const config = { applications: [TEST_APP], users: [TEST_USER], resources: [TOOLS] };
const loopback = { [oauth.allowInsecureRequests]: true };

describe("dynamic client registration (RFC 7591, RFC 7592)", () => {
  describe("--client-registration off (the default)", () => {
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({ config });
    });
    after(() => server.close());

    it("answers 404 and advertises no registration_endpoint", async () => {
      const res = await postJson(server.url + REGISTER, { redirect_uris: [CALLBACK] });
      assert.equal(res.status, 404);
      assert.equal(res.body.error, "not_found");
      assert.equal((await getJson(`${server.url}/api/oauth/register/abc`)).status, 404);
      assert.equal((await getJson(`${server.url}/.well-known/openid-configuration`)).body.registration_endpoint, undefined);
    });
  });

  describe("--client-registration token", () => {
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({ config, overrides: { clientRegistration: "token", registrationToken: REGISTRATION_TOKEN } });
    });
    after(() => server.close());

    it("needs the registration token as a Bearer token: none or a wrong one is 401 invalid_token", async () => {
      for (const headers of [{}, { authorization: "Bearer wrong-token" }, { authorization: `Basic ${REGISTRATION_TOKEN}` }] as Record<string, string>[]) {
        const res = await postJson(server.url + REGISTER, { redirect_uris: [CALLBACK] }, headers);
        assert.equal(res.status, 401, JSON.stringify(headers));
        assert.equal(res.body.error, "invalid_token");
        assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer /);
      }
      const ok = await postJson(server.url + REGISTER, { redirect_uris: [CALLBACK] }, { authorization: `Bearer ${REGISTRATION_TOKEN}` });
      assert.equal(ok.status, 201, ok.text);
      assert.equal((await getJson(`${server.url}/.well-known/oauth-authorization-server`)).body.registration_endpoint, `${server.issuer}${REGISTER}`);
    });
  });

  describe("--client-registration open", () => {
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({ config, overrides: { clientRegistration: "open", registrationMaxPerHour: 1000 } });
    });
    after(() => server.close());
    const register = (metadata: unknown) => postJson(server.url + REGISTER, metadata);

    it("registers a confidential client and answers the RFC 7591 fields", async () => {
      const res = await register({
        redirect_uris: ["https://app.example.com/cb", "com.example.app:/oauth", "http://127.0.0.1/cb"],
        grant_types: ["authorization_code", "refresh_token"], client_name: "Example", client_uri: "https://app.example.com",
        logo_uri: "https://app.example.com/logo.png", contacts: ["ops@example.com"], software_id: "example", software_version: "1.0",
        scope: "openid mcp:tools", jwks: { keys: [] },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers.get("cache-control"), "no-store");
      const body = res.body;
      assert.match(body.client_id, /^[A-Za-z0-9_-]{22}$/);
      assert.ok(body.client_secret.length >= 43);
      assert.equal(body.client_secret_expires_at, 0);
      assert.equal(typeof body.client_id_issued_at, "number");
      assert.ok(body.registration_access_token);
      assert.equal(body.registration_client_uri, `${server.issuer}${REGISTER}/${body.client_id}`);
      assert.equal(body.token_endpoint_auth_method, "client_secret_basic");
      assert.deepEqual(body.response_types, ["code"]);
      assert.equal(body.client_name, "Example");
      // It is an application that needs consent, with the code flow only.
      const app = (await server.store.applications.findByClientId(body.client_id, true))!;
      assert.equal(app.consentRequired, true);
      assert.equal(app.publicClient, false);
      assert.deepEqual(app.grantTypes, ["authorization_code", "refresh_token"]);
      // Its secret works at the token endpoint; password is not its grant.
      const pw = await postForm(server.url + TOKEN_PATH, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }, {
        authorization: basicAuth(body.client_id, body.client_secret),
      });
      assert.equal(pw.body.error, "unauthorized_client");
    });

    it("attack: a registration smuggling password, client_credentials, implicit, a wildcard or fragment redirect, or the admin scope is refused", async () => {
      const before = (await server.store.applications.list()).length;
      const cases: [unknown, string][] = [
        [{ redirect_uris: [CALLBACK], grant_types: ["authorization_code", "password"] }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], grant_types: ["client_credentials"] }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], grant_types: ["implicit"] }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], response_types: ["token"] }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], response_types: ["code", "id_token"] }, "invalid_client_metadata"],
        [{ redirect_uris: ["https://*.example.com/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["https://app.example.com/*"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["https://app.example.com/cb#frag"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["http://app.example.com/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri"],
        [{ redirect_uris: [] }, "invalid_redirect_uri"],
        [{}, "invalid_redirect_uri"],
        [{ redirect_uris: [CALLBACK], scope: "openid identity:admin" }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], token_endpoint_auth_method: "private_key_jwt" }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], client_uri: "javascript:alert(1)" }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], jwks: { keys: [] }, jwks_uri: "https://app.example.com/jwks" }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], client_name: { nested: true } }, "invalid_client_metadata"],
        // Anyone may register: the service must not POST logout tokens to itself or its neighbours.
        [{ redirect_uris: [CALLBACK], backchannel_logout_uri: "http://127.0.0.1:8123/logout" }, "invalid_client_metadata"],
        [{ redirect_uris: [CALLBACK], backchannel_logout_uri: "https://localhost/logout" }, "invalid_client_metadata"],
        [[1, 2], "invalid_client_metadata"],
      ];
      for (const [metadata, error] of cases) {
        const res = await register(metadata);
        assert.equal(res.status, 400, `${JSON.stringify(metadata)}: ${res.text}`);
        assert.equal(res.body.error, error, JSON.stringify(metadata));
        assert.ok(res.body.error_description.length > 0);
      }
      const notJson = await call(server.url + REGISTER, { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
      assert.equal(notJson.body.error, "invalid_client_metadata");
      assert.equal((await server.store.applications.list()).length, before, "nothing was registered");
    });

    it("a private_key_jwt client registers its public keys, gets no secret, and authenticates with oauth4webapi's PrivateKeyJwt", async () => {
      const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
      const jwk = { ...(await exportJWK(publicKey)), kid: "registered", alg: "ES256", use: "sig" };
      const refused = await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [{ ...jwk, d: "private" }] } });
      assert.equal(refused.body.error, "invalid_client_metadata");
      assert.match(refused.body.error_description, /public keys only/);
      const privateUri = await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: "private_key_jwt", jwks_uri: "https://10.0.0.1/jwks" });
      assert.equal(privateUri.body.error, "invalid_client_metadata");
      const res = await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [jwk] } });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.client_secret, undefined);
      assert.equal(res.body.token_endpoint_auth_method, "private_key_jwt");
      const client = { client_id: res.body.client_id as string };
      const as = await oauth.processDiscoveryResponse(new URL(server.issuer), await oauth.discoveryRequest(new URL(server.issuer), loopback));
      const { jar } = await signIn(server);
      const { verifier, challenge } = pkcePair();
      const page = await browse(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: "S256", scope: "openid", state: "s1" }), jar);
      const code = await consentedCode(server, page, jar);
      const params = oauth.validateAuthResponse(as, client, new URL(`${CALLBACK}?code=${code}&state=s1&iss=${encodeURIComponent(server.issuer)}`), "s1");
      const withOtherKey = await oauth.authorizationCodeGrantRequest(as, client, oauth.PrivateKeyJwt((await generateKeyPair("ES256")).privateKey), params, CALLBACK, verifier, loopback);
      assert.equal(withOtherKey.status, 401, "an assertion signed by a key the client did not register is invalid_client");
      const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.PrivateKeyJwt(privateKey), params, CALLBACK, verifier, loopback);
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
      assert.ok(tokens.access_token);
    });

    it("a public client (none) gets no secret and must use PKCE S256; its token is for the resource it asks", async () => {
      const res = await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] });
      assert.equal(res.status, 201, res.text);
      const { client_id } = res.body;
      assert.equal(res.body.client_secret, undefined);
      const { jar } = await signIn(server);
      const noPkce = await browse(authorizeUrl(server.url, { client_id, redirect_uri: CALLBACK }), jar);
      assert.equal(new URL(noPkce.headers.get("location")!).searchParams.get("error"), "invalid_request");
      const plain = await browse(authorizeUrl(server.url, { client_id, redirect_uri: CALLBACK, code_challenge: "x".repeat(43), code_challenge_method: "plain" }), jar);
      assert.equal(new URL(plain.headers.get("location")!).searchParams.get("error"), "invalid_request");
      const { verifier, challenge } = pkcePair();
      const url = new URL(authorizeUrl(server.url, { client_id, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: "S256", scope: "openid mcp:tools" }));
      url.searchParams.append("resource", TOOLS.uri);
      const page = await browse(url.href, jar);
      // Registered clients always need consent (issue 43 §2): the page, or a code once allowed.
      const code = await consentedCode(server, page, jar);
      const tokens = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, client_id, code_verifier: verifier });
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(decodeJwt(tokens.body.access_token).aud, TOOLS.uri);
    });

    it("RFC 7592: reads, updates and deletes with its own registration access token only", async () => {
      const mine = (await register({ redirect_uris: [CALLBACK], client_name: "Mine" })).body;
      const theirs = (await register({ redirect_uris: [CALLBACK], client_name: "Theirs" })).body;
      const auth = (token: string) => ({ authorization: `Bearer ${token}` });
      const read = await getJson(mine.registration_client_uri, auth(mine.registration_access_token));
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.client_name, "Mine");
      assert.equal(read.body.client_secret, undefined);
      // Attack: another client's registration token opens nothing of mine.
      for (const init of [{ method: "GET" }, { method: "DELETE" }, { method: "PUT", body: JSON.stringify({ client_id: mine.client_id, redirect_uris: ["https://evil.example/cb"] }) }]) {
        const res = await call(mine.registration_client_uri, { ...init, headers: { "content-type": "application/json", ...auth(theirs.registration_access_token) } });
        assert.equal(res.status, 401, `${init.method}: ${res.text}`);
        assert.equal(res.body.error, "invalid_token");
      }
      assert.equal((await getJson(mine.registration_client_uri)).status, 401);
      const put = await call(mine.registration_client_uri, {
        method: "PUT",
        headers: { "content-type": "application/json", ...auth(mine.registration_access_token) },
        body: JSON.stringify({ client_id: mine.client_id, redirect_uris: ["https://app.example.com/new"], client_name: "Renamed" }),
      });
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(put.body.redirect_uris, ["https://app.example.com/new"]);
      assert.deepEqual((await server.store.applications.findByClientId(mine.client_id, true))?.redirectUris, ["https://app.example.com/new"]);
      const smuggled = await call(mine.registration_client_uri, {
        method: "PUT",
        headers: { "content-type": "application/json", ...auth(mine.registration_access_token) },
        body: JSON.stringify({ client_id: mine.client_id, redirect_uris: [CALLBACK], grant_types: ["authorization_code", "client_credentials"] }),
      });
      assert.equal(smuggled.body.error, "invalid_client_metadata");
      const deleted = await call(mine.registration_client_uri, { method: "DELETE", headers: auth(mine.registration_access_token) });
      assert.equal(deleted.status, 204);
      assert.equal(await server.store.applications.findByClientId(mine.client_id, true), undefined);
      assert.equal((await getJson(theirs.registration_client_uri, auth(theirs.registration_access_token))).status, 200);
    });
  });

  describe("--registration-max-per-hour", () => {
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({ config, overrides: { clientRegistration: "open", registrationMaxPerHour: 3 } });
    });
    after(() => server.close());

    it("attack: a flood of registrations from one address stops at the limit, however many arrive at once", async () => {
      // Refused metadata takes nothing from the budget.
      for (let i = 0; i < 5; i++) assert.equal((await postJson(server.url + REGISTER, { redirect_uris: ["https://*.evil.example/"] })).status, 400);
      const answers = await Promise.all(Array.from({ length: 12 }, () => postJson(server.url + REGISTER, { redirect_uris: [CALLBACK] })));
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [...Array(3).fill(201), ...Array(9).fill(429)]);
      const refused = answers.find((a) => a.status === 429)!;
      assert.match(refused.body.error_description, /at most 3 an hour/);
    });
  });
});

/** The code for a registered client: through the consent page when there is one (issue 43 §2), else straight from authorize. */
async function consentedCode(server: RunningServer, page: Response, jar: Parameters<typeof browse>[1]): Promise<string> {
  if (page.status === 303) return new URL(page.headers.get("location")!).searchParams.get("code")!;
  const html = await page.text();
  assert.equal(page.status, 200, html);
  const fields = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));
  const res = await fetch(`${server.url}/login/oauth/consent`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, decision: "allow" }).toString(),
  });
  assert.equal(res.status, 303, await res.text());
  return new URL(res.headers.get("location")!).searchParams.get("code")!;
}
