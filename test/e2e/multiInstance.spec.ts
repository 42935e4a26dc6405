import assert from "node:assert/strict";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import * as oauth from "oauth4webapi";
import { describePostgres, freshPostgresSchema, type PostgresSchema } from "../support/databases.js";
import { startInstance, type Instance } from "../support/instances.js";
import { ADMIN_TOKEN, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

// Behind a load balancer every instance must announce the same issuer.
const ISSUER = "http://identity.test";
// The documented bound on a key rotation reaching another instance is the
// reload interval; a small one keeps this test short.
const KEY_RELOAD_SECONDS = 1;

const client: oauth.Client = { client_id: TEST_APP.clientId };
const clientAuth = oauth.ClientSecretBasic(TEST_APP.clientSecret);
const insecure = { [oauth.allowInsecureRequests]: true };

/** One instance as an OAuth client sees it (the issuer is shared, the endpoints are this instance's). */
const serverOf = (instance: Instance): oauth.AuthorizationServer => ({
  issuer: ISSUER,
  token_endpoint: `${instance.url}/api/login/oauth/access_token`,
  introspection_endpoint: `${instance.url}/api/login/oauth/introspect`,
});

async function passwordGrant(instance: Instance): Promise<oauth.TokenEndpointResponse> {
  const as = serverOf(instance);
  const response = await oauth.genericTokenEndpointRequest(
    as, client, clientAuth, "password", { username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" }, insecure,
  );
  return oauth.processGenericTokenEndpointResponse(as, client, response);
}

async function introspect(instance: Instance, token: string): Promise<oauth.IntrospectionResponse> {
  const as = serverOf(instance);
  return oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, clientAuth, token, insecure));
}

async function jwks(instance: Instance): Promise<JSONWebKeySet> {
  const res = await fetch(`${instance.url}/.well-known/jwks`);
  assert.equal(res.status, 200);
  return (await res.json()) as JSONWebKeySet;
}

async function rotateKey(instance: Instance): Promise<string> {
  const res = await fetch(`${instance.url}/identity.v1.KeyAdminService/RotateKey`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
    body: "{}",
  });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { key: { kid: string } }).key.kid;
}

describePostgres("several instances on one PostgreSQL database (real processes)", () => {
  let schema: PostgresSchema;
  let a: Instance;
  let b: Instance;

  before(async function () {
    this.timeout(60_000);
    schema = freshPostgresSchema();
    const args = [
      "--database", schema.url,
      "--config", writeConfigFile({ applications: [TEST_APP], users: [TEST_USER] }),
      "--admin-token", ADMIN_TOKEN,
      "--issuer", ISSUER,
      "--key-reload-seconds", String(KEY_RELOAD_SECONDS),
      // This suite is about propagation: a rotated key signs at once.
      "--key-activation-delay-seconds", "0",
    ];
    // Started together: migrations and provisioning must cope with it.
    const started = await Promise.allSettled([startInstance(args), startInstance(args)]);
    [a, b] = started.map((s) => (s.status === "fulfilled" ? s.value : undefined!));
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await schema?.drop();
  });

  it("introspects a token issued by A as active on B, and the other way round", async () => {
    const fromA = await passwordGrant(a);
    const fromB = await passwordGrant(b);
    for (const [token, at] of [[fromA.access_token, b], [fromB.access_token, a]] as const) {
      const result = await introspect(at, token);
      assert.equal(result.active, true, b.stderr());
      assert.equal(result.username, TEST_USER.name);
      assert.equal(result.client_id, TEST_APP.clientId);
      assert.equal(result.iss, ISSUER);
    }
  });

  it(`publishes a key rotated through A on B within the reload bound (${KEY_RELOAD_SECONDS}s), and B signs with it`, async function () {
    this.timeout(30_000);
    const signedBefore = await passwordGrant(a);
    const kid = await rotateKey(a);
    // The bound is the reload interval; the extra margin only absorbs a loaded CI machine.
    const deadline = Date.now() + KEY_RELOAD_SECONDS * 1000 + 10_000;
    let published = await jwks(b);
    while (!published.keys.some((k) => k.kid === kid)) {
      assert.ok(Date.now() < deadline, `B did not publish ${kid} in time`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      published = await jwks(b);
    }

    // B now signs with the new key; A's published set verifies B's token, and A accepts it.
    const fromB = await passwordGrant(b);
    assert.equal(decodeProtectedHeader(fromB.access_token).kid, kid);
    const { payload } = await jwtVerify(fromB.access_token, createLocalJWKSet(await jwks(a)), { issuer: ISSUER });
    assert.equal(payload.preferred_username, TEST_USER.name);
    assert.equal((await introspect(a, fromB.access_token)).active, true);

    // A token signed before the rotation still verifies: the old key stays published.
    assert.notEqual(decodeProtectedHeader(signedBefore.access_token).kid, kid);
    await jwtVerify(signedBefore.access_token, createLocalJWKSet(published), { issuer: ISSUER });
  });

  // ---- Cases that need features from other branches; the lead fills them in after merging. ----
  // issue 4 (refresh rotation, revocation):
  it("revokes on B and the token is inactive on A at once (after issue 4)");
  it("lets exactly one chain live when 100 concurrent refreshes of one token hit A and B (after issue 4)");
  // issue 3 (authorization code, browser sessions):
  it("redeems on B a code issued through A (after issue 3)");
  it("keeps a browser session signed in on A valid on B (after issue 3)");
});
