import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from "jose";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, signIn, type CookieJar } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { INTROSPECT_PATH, TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, call, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 43 §1: RFC 8707 resource indicators. A token asked for with
 * `resource` carries the resource server's URI as `aud`, and a later token of
 * the same grant may narrow the resources but never widen them.
 */
const TOOLS = { uri: "https://tools.example.com/mcp", name: "Tools", scopes: [{ name: "mcp:tools", description: "Call the tools" }] };
const FILES = { uri: "https://files.example.com/", name: "Files", scopes: [{ name: "files:read", description: "Read your files" }] };
const APP = { ...TEST_APP, refreshExpireInHours: 24 };
const OPAQUE_APP = { ...APP, name: "opaque-resources", clientId: "client-opaque-resources", clientSecret: "secret-of-client-opaque-resources", accessTokenStrategy: "opaque" };
const CALLBACK = APP.redirectUris[0]!;

describe("resource indicators (RFC 8707)", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  let jar: CookieJar;
  let verifyFor: (token: string, audience: string) => Promise<Record<string, unknown>>;

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [APP, OPAQUE_APP], users: [TEST_USER], resources: [TOOLS, FILES] } });
    ({ jar } = await signIn(server));
    const keys = createLocalJWKSet((await call(`${server.url}/.well-known/jwks`)).body as JSONWebKeySet);
    verifyFor = async (token, audience) =>
      (await jwtVerify(token, keys, { issuer: server.issuer, audience, currentDate: new Date(clock.now()) })).payload as Record<string, unknown>;
  });
  after(() => server.close());

  /** The authorize request with each of `resources` as a `resource` parameter of its own. */
  async function authorize(resources: string[], params: Record<string, string> = {}, client = APP): Promise<URL> {
    const url = new URL(authorizeUrl(server.url, { client_id: client.clientId, ...params }));
    for (const r of resources) url.searchParams.append("resource", r);
    const res = await browse(url.href, jar);
    assert.equal(res.status, 303, await res.text());
    return new URL(res.headers.get("location")!);
  }

  async function code(resources: string[], params: Record<string, string> = {}, client = APP): Promise<string> {
    const location = await authorize(resources, params, client);
    const value = location.searchParams.get("code");
    assert.ok(value, location.href);
    return value;
  }

  /** A token request with `resource` repeated as given. */
  function token(fields: Record<string, string>, resources: string[] = [], client = APP) {
    const body = new URLSearchParams({ client_id: client.clientId, client_secret: client.clientSecret, ...fields });
    for (const r of resources) body.append("resource", r);
    return call(server.url + TOKEN_PATH, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: body.toString() });
  }

  const introspect = async (value: string, client = APP) =>
    (await postForm(server.url + INTROSPECT_PATH, { token: value }, { authorization: basicAuth(client.clientId, client.clientSecret) })).body;

  it("makes the resource the access token's aud, and introspection says so", async () => {
    const res = await token({ grant_type: "authorization_code", code: await code([TOOLS.uri], { scope: "openid mcp:tools" }), redirect_uri: CALLBACK });
    assert.equal(res.status, 200, res.text);
    const claims = await verifyFor(res.body.access_token, TOOLS.uri);
    assert.equal(claims.aud, TOOLS.uri);
    assert.equal(claims.azp, APP.clientId);
    assert.equal(res.body.scope, "openid mcp:tools");
    // The ID token is still the client's.
    assert.equal(decodeJwt(res.body.id_token).aud, APP.clientId);
    const seen = await introspect(res.body.access_token);
    assert.equal(seen.active, true);
    assert.deepEqual(seen.aud, [TOOLS.uri]);
  });

  it("attack: a token for resource A is not one for resource B", async () => {
    const res = await token({ grant_type: "authorization_code", code: await code([TOOLS.uri]), redirect_uri: CALLBACK });
    assert.equal(res.status, 200, res.text);
    // B, checking the audience as a resource server must (RFC 8707 §3), refuses it.
    await assert.rejects(verifyFor(res.body.access_token, FILES.uri), /aud/);
    assert.deepEqual((await introspect(res.body.access_token)).aud, [TOOLS.uri]);
  });

  it("keeps today's audience without resource, and grants no resource's scope", async () => {
    const res = await token({ grant_type: "authorization_code", code: await code([], { scope: "openid mcp:tools" }), redirect_uri: CALLBACK });
    assert.equal(res.status, 200, res.text);
    assert.equal(decodeJwt(res.body.access_token).aud, APP.clientId);
    assert.equal(res.body.scope, "openid");
    assert.deepEqual((await introspect(res.body.access_token)).aud, [APP.clientId]);
  });

  it("narrows at the code exchange and at refresh, all granted by default", async () => {
    const issued = await token({ grant_type: "authorization_code", code: await code([TOOLS.uri, FILES.uri]), redirect_uri: CALLBACK }, [FILES.uri]);
    assert.equal(issued.status, 200, issued.text);
    assert.equal(decodeJwt(issued.body.access_token).aud, FILES.uri);
    // The refresh token keeps both: a refresh may name the other one ...
    const tools = await token({ grant_type: "refresh_token", refresh_token: issued.body.refresh_token }, [TOOLS.uri]);
    assert.equal(tools.status, 200, tools.text);
    assert.equal(decodeJwt(tools.body.access_token).aud, TOOLS.uri);
    // ... or none, for both.
    const both = await token({ grant_type: "refresh_token", refresh_token: tools.body.refresh_token });
    assert.equal(both.status, 200, both.text);
    assert.deepEqual(decodeJwt(both.body.access_token).aud, [TOOLS.uri, FILES.uri]);
  });

  it("attack: a refresh that widens the resources is invalid_target", async () => {
    const issued = await token({ grant_type: "authorization_code", code: await code([TOOLS.uri]), redirect_uri: CALLBACK });
    assert.equal(issued.status, 200, issued.text);
    const wider = await token({ grant_type: "refresh_token", refresh_token: issued.body.refresh_token }, [TOOLS.uri, FILES.uri]);
    assert.equal(wider.status, 400, wider.text);
    assert.equal(wider.body.error, "invalid_target");
    // Nor can a grant made without any resource be turned into one for a resource.
    const plain = await token({ grant_type: "authorization_code", code: await code([]), redirect_uri: CALLBACK });
    const widened = await token({ grant_type: "refresh_token", refresh_token: plain.body.refresh_token }, [TOOLS.uri]);
    assert.equal(widened.body.error, "invalid_target");
    // The refused refresh consumed nothing: the token still refreshes within its grant.
    const narrow = await token({ grant_type: "refresh_token", refresh_token: issued.body.refresh_token });
    assert.equal(narrow.status, 200, narrow.text);
    assert.equal(decodeJwt(narrow.body.access_token).aud, TOOLS.uri);
  });

  it("refuses at the code exchange a resource the authorize request did not name", async () => {
    const res = await token({ grant_type: "authorization_code", code: await code([TOOLS.uri]), redirect_uri: CALLBACK }, [FILES.uri]);
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_target");
  });

  it("sends invalid_target back from authorize for an unknown resource or one with a fragment", async () => {
    for (const bad of ["https://unknown.example.com/", `${TOOLS.uri}#frag`, "not-a-uri"]) {
      const location = await authorize([bad]);
      assert.equal(location.origin + location.pathname, CALLBACK);
      assert.equal(location.searchParams.get("error"), "invalid_target", bad);
      assert.equal(location.searchParams.get("state"), "state-123");
    }
  });

  it("client_credentials: any registered resource, and invalid_target for others", async () => {
    const ok = await token({ grant_type: "client_credentials", scope: "files:read" }, [FILES.uri]);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(decodeJwt(ok.body.access_token).aud, FILES.uri);
    assert.equal(ok.body.scope, "files:read");
    for (const bad of ["https://unknown.example.com/", `${FILES.uri}#x`]) {
      const res = await token({ grant_type: "client_credentials" }, [bad]);
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error, "invalid_target");
    }
    // A value that could run into another once joined is refused, not split.
    const spaced = await token({ grant_type: "client_credentials" }, [`${FILES.uri} ${TOOLS.uri}`]);
    assert.equal(spaced.body.error, "invalid_target");
  });

  it("takes resource as a JSON list and over Connect as a repeated field", async () => {
    const json = await call(server.url + TOKEN_PATH, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "client_credentials", client_id: APP.clientId, client_secret: APP.clientSecret, resource: [TOOLS.uri, FILES.uri] }),
    });
    assert.equal(json.status, 200, json.text);
    assert.deepEqual(decodeJwt(json.body.access_token).aud, [TOOLS.uri, FILES.uri]);
    const client = createClient(TokenService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const rpc = await client.token({ grantType: "client_credentials", clientId: APP.clientId, clientSecret: APP.clientSecret, resource: [FILES.uri] });
    assert.equal(decodeJwt(rpc.accessToken).aud, FILES.uri);
    await assert.rejects(
      client.token({ grantType: "client_credentials", clientId: APP.clientId, clientSecret: APP.clientSecret, resource: ["https://nope.example/"] }),
      /not a resource server/,
    );
  });

  it("an opaque token's introspection reports its resource", async () => {
    const res = await token({ grant_type: "authorization_code", code: await code([FILES.uri], {}, OPAQUE_APP), redirect_uri: CALLBACK }, [], OPAQUE_APP);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((await introspect(res.body.access_token, OPAQUE_APP)).aud, [FILES.uri]);
  });
});
