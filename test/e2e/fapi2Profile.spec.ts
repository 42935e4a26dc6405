import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SignJWT } from "jose";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import type { RunningServer } from "../../src/app/server.js";
import { OAuthError } from "../../src/oauth/errors.js";
import { authorizeUrl, browse, CookieJar, pkcePair } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { freshSharedTestDatabase, type FreshDatabase } from "../support/databases.js";
import { dpopKey, dpopProof, type DPoPKey } from "../support/dpop.js";
import { clientKey, locationOf, signInAt, type ClientKey } from "../support/highAssurance.js";
import { assertOAuthError, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const PAR_PATH = "/api/oauth/par";
const CALLBACK = TEST_APP.redirectUris[0]!;
const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
const FAPI_APP = {
  name: "bank", clientId: "bank-client", redirectUris: [CALLBACK], grantTypes: ["authorization_code"],
  tokenEndpointAuthMethod: "private_key_jwt", signingAlg: "ES256", profile: "fapi2",
};

/**
 * Issue 45 §7: the FAPI 2.0 profile's refusals. Saving a `fapi2`
 * application that the profile does not allow (config file, RPC, CLI), each
 * bad field named; and at run time an authorize request without PAR or
 * PKCE S256, a token request without a DPoP proof, an RS256 client
 * assertion, and a code older than 60 seconds whatever --code-ttl-seconds
 * says. The whole sign-in that works: fapi2Browser.spec.ts.
 */
describe("the FAPI 2.0 profile (fapi2)", function () {
  this.timeout(60_000);

  describe("saving an application", () => {
    let server: RunningServer;
    let database: FreshDatabase;
    let jwks: string;
    before(async () => {
      jwks = JSON.stringify({ keys: [(await clientKey("ES256")).publicJwk] });
      database = freshSharedTestDatabase();
      server = await startTestServer({ database: database.url });
    });
    after(async () => {
      await server?.close();
      await database?.dispose();
    });

    it("refuses a config file's fapi2 application, naming every field the profile refuses", async () => {
      const bad = { ...TEST_APP, profile: "fapi2", grantTypes: ["password", "implicit", "refresh_token"] };
      await assert.rejects(startTestServer({ config: { applications: [bad], users: [TEST_USER] } }), (err: Error) => {
        assert.match(err.message, /tokenEndpointAuthMethod: must be private_key_jwt for profile fapi2, not client_secret_basic/);
        assert.match(err.message, /signingAlg: must be PS256, ES256, EdDSA for profile fapi2, not RS256/);
        assert.match(err.message, /grantTypes: profile fapi2 refuses the password and implicit grant/);
        return true;
      });
      await assert.rejects(startTestServer({ config: { applications: [{ ...TEST_APP, profile: "fapi1" }], users: [TEST_USER] } }), /profile: is not one of/);
    });

    it("refuses by RPC, naming each field, on create and on an update that would leave the profile", async () => {
      const apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
      const refused = await apps.createApplication({ application: { name: "rpc-bank", profile: "fapi2", tokenEndpointAuthMethod: "client_secret_post" } }, admin)
        .catch((err: unknown) => err);
      assert.ok(refused instanceof ConnectError);
      assert.match(refused.rawMessage, /tokenEndpointAuthMethod: must be private_key_jwt/);
      assert.match(refused.rawMessage, /signingAlg: must be PS256, ES256, EdDSA/);

      const keyed = { name: "rpc-bank", tokenEndpointAuthMethod: "private_key_jwt", jwks, signingAlg: "EdDSA", redirectUris: [CALLBACK] };
      const created = await apps.createApplication({ application: { ...keyed, profile: "fapi2" } }, admin);
      assert.equal(created.application?.profile, "fapi2");
      const weaker = await apps.updateApplication({ application: { name: "rpc-bank", signingAlg: "RS256", grantTypes: ["password"] } }, admin).catch((err: unknown) => err);
      assert.match((weaker as ConnectError).rawMessage, /signingAlg: .*grantTypes: profile fapi2 refuses the password grant/);
      assert.equal((await apps.getApplication({ name: "rpc-bank" }, admin)).application?.signingAlg, "EdDSA", "nothing was saved");

      const left = await apps.updateApplication({ application: { name: "rpc-bank", profile: "", signingAlg: "RS256" } }, admin);
      assert.deepEqual([left.application?.profile, left.application?.signingAlg], ["", "RS256"]);
      const back = await apps.updateApplication({ application: { name: "rpc-bank", profile: "fapi2" } }, admin).catch((err: unknown) => err);
      assert.match((back as ConnectError).rawMessage, /signingAlg: must be/, "turning the profile on checks what the application already has");
    });

    it("refuses by CLI flags, naming the fields, and takes --profile fapi2 with what it needs", async () => {
      const cli = (...args: string[]) => runAdminCommand("app", [...args, "--database", database.url], {});
      await assert.rejects(cli("create", "--name", "cli-bank", "--profile", "fapi2"), (err: unknown) => {
        assert.ok(err instanceof OAuthError);
        assert.match(err.description, /tokenEndpointAuthMethod: .*signingAlg: /);
        return true;
      });
      const created = JSON.parse(await cli("create", "--name", "cli-bank", "--profile", "fapi2", "--token-endpoint-auth-method", "private_key_jwt", "--jwks", jwks, "--signing-alg", "PS256"));
      assert.equal(created.profile, "fapi2");
      await assert.rejects(cli("update", "--name", "cli-bank", "--token-endpoint-auth-method", "client_secret_basic"), /tokenEndpointAuthMethod: must be private_key_jwt/);
    });
  });

  describe("at run time", () => {
    let server: RunningServer;
    let clock: FakeClock;
    let key: ClientKey;
    let rsaKey: ClientKey;
    let dpop: DPoPKey;

    before(async () => {
      [key, rsaKey, dpop] = await Promise.all([clientKey("ES256"), clientKey("RS256"), dpopKey()]);
      clock = new FakeClock();
      const jwks = { keys: [key.publicJwk, rsaKey.publicJwk] };
      server = await startTestServer({ clock, config: { applications: [{ ...FAPI_APP, jwks }, { ...FAPI_APP, name: "plain", clientId: "plain-client", profile: "", jwks }], users: [TEST_USER] } });
    });
    after(() => server?.close());

    const nowSeconds = () => Math.floor(clock.now() / 1000);

    /** A private_key_jwt assertion (RFC 7523), timed by the server's clock. */
    function assertion(signer: ClientKey = key, clientId = FAPI_APP.clientId): Promise<string> {
      return new SignJWT({ jti: randomUUID() })
        .setProtectedHeader({ alg: signer.alg, kid: signer.kid })
        .setIssuer(clientId).setSubject(clientId).setAudience(server.issuer)
        .setIssuedAt(nowSeconds()).setExpirationTime(nowSeconds() + 60)
        .sign(signer.privateKey);
    }

    async function push(fields: Record<string, string>, signer?: ClientKey, clientId?: string, headers: Record<string, string> = {}) {
      const base = { response_type: "code", redirect_uri: CALLBACK, scope: "openid", state: "s" };
      return postForm(`${server.url}${PAR_PATH}`, { ...base, ...fields, client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(signer, clientId) }, headers);
    }

    const proofFor = (path: string, signer: DPoPKey = dpop) => dpopProof(signer, { htm: "POST", htu: `${server.issuer}${path}`, iat: nowSeconds() });

    const usePushed = (requestUri: string, clientId = FAPI_APP.clientId) =>
      authorizeUrl(server.url, { client_id: clientId, request_uri: requestUri, redirect_uri: undefined, response_type: undefined, scope: undefined, state: undefined });

    /** A code from a pushed request with PKCE, and its verifier. */
    async function pushedCode(): Promise<{ code: string; verifier: string }> {
      const { verifier, challenge } = pkcePair();
      const pushed = await push({ code_challenge: challenge, code_challenge_method: "S256" });
      assert.equal(pushed.status, 201, pushed.text);
      const location = locationOf(await signInAt(usePushed(pushed.body.request_uri)));
      return { code: location.searchParams.get("code")!, verifier };
    }

    async function exchange(code: string, verifier: string, withProof: boolean, signer: DPoPKey = dpop) {
      const proof: Record<string, string> = withProof ? { dpop: await proofFor(TOKEN_PATH, signer) } : {};
      const fields = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion() };
      return postForm(`${server.url}${TOKEN_PATH}`, fields, proof);
    }

    it("sends an authorize request that did not come through PAR back as invalid_request, saying why", async () => {
      const { challenge } = pkcePair();
      const res = await browse(authorizeUrl(server.url, { client_id: FAPI_APP.clientId, code_challenge: challenge, code_challenge_method: "S256" }), new CookieJar());
      const location = locationOf(res);
      assert.equal(`${location.origin}${location.pathname}`, CALLBACK);
      assert.equal(location.searchParams.get("error"), "invalid_request");
      assert.match(location.searchParams.get("error_description")!, /FAPI 2\.0 profile: its authorization request must be pushed first \(PAR, RFC 9126\)/);
    });

    it("refuses a pushed request without PKCE S256 at PAR, to the client, as invalid_request", async () => {
      const res = await push({});
      assertOAuthError(res, 400, "invalid_request");
      assert.match(res.body.error_description, /PKCE, code_challenge with code_challenge_method=S256/);
      assert.equal((await push({ code_challenge: pkcePair().challenge, code_challenge_method: "S256" }, key, "plain-client")).status, 201, "the same keys without the profile");
      assert.equal((await push({}, key, "plain-client")).status, 201, "PKCE is the profile's rule, not every client's");
    });

    it("refuses at authorize a request pushed without PKCE before the application turned fapi2", async () => {
      await server.domain.applicationAdmin.update({ name: "plain", profile: "" });
      const pushed = await push({}, key, "plain-client");
      assert.equal(pushed.status, 201, pushed.text);
      await server.domain.applicationAdmin.update({ name: "plain", profile: "fapi2" });
      try {
        const location = locationOf(await browse(usePushed(pushed.body.request_uri, "plain-client"), new CookieJar()));
        assert.equal(location.searchParams.get("error"), "invalid_request");
        assert.match(location.searchParams.get("error_description")!, /PKCE/);
      } finally {
        await server.domain.applicationAdmin.update({ name: "plain", profile: "" });
      }
    });

    it("refuses an RS256 client assertion from a fapi2 client (FAPI 2.0 §5.4), and takes it from one without the profile", async () => {
      const challenge = { code_challenge: pkcePair().challenge, code_challenge_method: "S256" };
      assertOAuthError(await push(challenge, rsaKey), 401, "invalid_client");
      assert.equal((await push(challenge, rsaKey, "plain-client")).status, 201);
    });

    it("refuses a token request without a DPoP proof as invalid_dpop_proof, and does not burn the code", async () => {
      const { code, verifier } = await pushedCode();
      const refused = await exchange(code, verifier, false);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error, "invalid_dpop_proof");
      assert.match(refused.body.error_description, /FAPI 2\.0 profile: its tokens are sender-constrained, so the token request needs a DPoP proof/);
      const bound = await exchange(code, verifier, true);
      assert.equal(bound.status, 200, bound.text);
      assert.equal(bound.body.token_type, "DPoP");
    });

    it("binds the code to the key of a DPoP proof sent with the push (RFC 9449 §10.1) or to its dpop_jkt, and refuses the two naming different keys", async () => {
      const { verifier, challenge } = pkcePair();
      const pkce = { code_challenge: challenge, code_challenge_method: "S256" };
      const pushed = await push(pkce, key, FAPI_APP.clientId, { dpop: await proofFor(PAR_PATH) });
      assert.equal(pushed.status, 201, pushed.text);
      const code = locationOf(await signInAt(usePushed(pushed.body.request_uri))).searchParams.get("code")!;
      const other = await dpopKey();
      const foreign = await exchange(code, verifier, true, other);
      assert.equal(foreign.body.error, "invalid_grant", foreign.text);
      assert.match(foreign.body.error_description, /bound to a DPoP key/);
      assert.equal((await exchange(code, verifier, true)).status, 200, "the key that pushed redeems it");

      const mismatch = await push({ ...pkce, dpop_jkt: other.jkt }, key, FAPI_APP.clientId, { dpop: await proofFor(PAR_PATH) });
      assertOAuthError(mismatch, 400, "invalid_dpop_proof");
      const wrongTarget = await push(pkce, key, FAPI_APP.clientId, { dpop: await proofFor(TOKEN_PATH) });
      assertOAuthError(wrongTarget, 400, "invalid_dpop_proof");

      const byParameter = await push({ ...pkce, dpop_jkt: other.jkt });
      const boundCode = locationOf(await signInAt(usePushed(byParameter.body.request_uri))).searchParams.get("code")!;
      assert.equal((await exchange(boundCode, verifier, true)).body.error, "invalid_grant", "dpop_jkt in the push binds the code too");
      assert.equal((await exchange(boundCode, verifier, true, other)).status, 200);
    });

    it("lets its codes live 60 seconds though --code-ttl-seconds says 300", async () => {
      const early = await pushedCode();
      clock.advanceSeconds(59);
      assert.equal((await exchange(early.code, early.verifier, true)).status, 200);

      const late = await pushedCode();
      clock.advanceSeconds(61);
      const expired = await exchange(late.code, late.verifier, true);
      assert.equal(expired.body.error, "invalid_grant", expired.text);
      assert.match(expired.body.error_description, /expired/);
    });
  });
});
