import assert from "node:assert/strict";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import * as oauth from "oauth4webapi";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import { authorizeUrl, browse, confirmSignOut, CookieJar, loginFormFields, pkcePair, signIn, submit } from "../support/browserless.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { startInstance, type Instance } from "../support/instances.js";
import { getJson, refresh } from "../support/oauth.js";
import { ADMIN_TOKEN, postForm, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";
import { scaledMs } from "../support/deadline.js";

// Behind a load balancer every instance must announce the same issuer.
const ISSUER = "http://identity.test";
// The documented bound on a key rotation reaching another instance is the
// reload interval; a small one keeps this test short.
const KEY_RELOAD_SECONDS = 1;
// The setting for a fleet whose clients refresh in parallel: a consumed refresh
// token presented again within it is refused without revoking the winner's
// chain. Far longer than the race below takes, even on a loaded machine.
const REFRESH_REUSE_GRACE_SECONDS = 60;
const RACERS = 100;

const APP = { ...TEST_APP, refreshExpireInHours: 24 };

const client: oauth.Client = { client_id: APP.clientId };
const clientAuth = oauth.ClientSecretBasic(APP.clientSecret);
const insecure = { [oauth.allowInsecureRequests]: true };

/** One instance as an OAuth client sees it (the issuer is shared, the endpoints are this instance's). */
const serverOf = (instance: Instance): oauth.AuthorizationServer => ({
  issuer: ISSUER,
  token_endpoint: `${instance.url}/api/login/oauth/access_token`,
  introspection_endpoint: `${instance.url}/api/login/oauth/introspect`,
  userinfo_endpoint: `${instance.url}/api/userinfo`,
  revocation_endpoint: `${instance.url}/api/login/oauth/revoke`,
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

async function refreshGrant(instance: Instance, refreshToken: string): Promise<oauth.TokenEndpointResponse> {
  const as = serverOf(instance);
  return oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshToken, insecure));
}

async function userinfo(instance: Instance, accessToken: string, subject: string): Promise<oauth.UserInfoResponse> {
  const as = serverOf(instance);
  return oauth.processUserInfoResponse(as, client, subject, await oauth.userInfoRequest(as, client, accessToken, insecure));
}

async function revoke(instance: Instance, token: string): Promise<void> {
  const as = serverOf(instance);
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, token, insecure));
}

/** Validate the authorization response and redeem its code (PKCE, public client) on `instance`, as a strict client. */
async function redeemCode(
  instance: Instance,
  location: URL,
  verifier: string,
  state: string,
  nonce?: string,
): Promise<oauth.TokenEndpointResponse> {
  const as = serverOf(instance);
  const params = oauth.validateAuthResponse(as, client, location, state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, APP.redirectUris[0]!, verifier, insecure);
  return oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true });
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

// Instances share a SQLite file on one machine and a PostgreSQL database across machines.
const SHARED_BACKENDS = BACKENDS.filter((backend) => backend.name !== "SQLite :memory:");

describeEachDatabase("several instances on one database (real processes)", (ctx) => {
  let a: Instance;
  let b: Instance;

  before(async function () {
    this.timeout(60_000);
    const args = [
      "--database", ctx.url,
      "--config", writeConfigFile({ applications: [APP], users: [TEST_USER] }),
      "--admin-token", ADMIN_TOKEN,
      "--issuer", ISSUER,
      "--key-reload-seconds", String(KEY_RELOAD_SECONDS),
      "--refresh-reuse-grace-seconds", String(REFRESH_REUSE_GRACE_SECONDS),
      // This suite is about propagation: a rotated key signs at once.
      "--key-activation-delay-seconds", "0",
    ];
    // Instances on one SQLite file (one machine, as `bench --workers` runs
    // them) start one after the other: provisioning takes no lock there.
    if (ctx.backend.name !== "PostgreSQL") {
      a = await startInstance(args);
      b = await startInstance(args);
      return;
    }
    // On PostgreSQL they start together: migrations and provisioning must cope with it.
    const started = await Promise.allSettled([startInstance(args), startInstance(args)]);
    [a, b] = started.map((s) => (s.status === "fulfilled" ? s.value : undefined!));
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it("introspects a token issued by A as active on B, and the other way round", async () => {
    const fromA = await passwordGrant(a);
    const fromB = await passwordGrant(b);
    for (const [token, at] of [[fromA.access_token, b], [fromB.access_token, a]] as const) {
      const result = await introspect(at, token);
      assert.equal(result.active, true, b.stderr());
      assert.equal(result.username, TEST_USER.name);
      assert.equal(result.client_id, APP.clientId);
      assert.equal(result.iss, ISSUER);
    }
  });

  it(`publishes a key rotated through A on B within the reload bound (${KEY_RELOAD_SECONDS}s), and B signs with it`, async function () {
    this.timeout(20_000 + scaledMs(10_000));
    const signedBefore = await passwordGrant(a);
    const kid = await rotateKey(a);
    // The bound is the reload interval; the extra margin only absorbs a loaded machine, and grows with its load.
    const deadline = Date.now() + KEY_RELOAD_SECONDS * 1000 + scaledMs(10_000);
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

  it("answers userinfo on B for a token issued on A", async () => {
    const fromA = await passwordGrant(a);
    const subject = oauth.getValidatedIdTokenClaims(fromA)!.sub;
    // Checks sub against the ID token's and the JSON content type.
    const claims = await userinfo(b, fromA.access_token, subject);
    assert.equal(claims.iss, ISSUER);
    assert.equal(claims.aud, APP.clientId);
    assert.equal(claims.preferred_username, TEST_USER.name);
    assert.equal(claims.name, TEST_USER.displayName);
  });

  it("revokes on B and A sees it at once: introspection, userinfo and refresh", async () => {
    const fromA = await passwordGrant(a);
    assert.equal((await introspect(a, fromA.access_token)).active, true);

    await revoke(b, fromA.access_token);
    assert.equal((await introspect(a, fromA.access_token)).active, false);
    const rejected = await getJson(`${a.url}/api/userinfo`, { authorization: `Bearer ${fromA.access_token}` });
    assert.equal(rejected.status, 401);
    assert.match(rejected.headers.get("www-authenticate") ?? "", /error="invalid_token"/);

    await revoke(b, fromA.refresh_token!);
    const refused = await refresh(a, fromA.refresh_token!, {}, APP);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, "invalid_grant");
    assert.match(refused.body.error_description, /revoked/);
  });

  it(`lets exactly one chain live when ${RACERS} concurrent refreshes of one token hit A and B`, async function () {
    this.timeout(60_000);
    const original = await passwordGrant(a);
    const results = await Promise.all(
      Array.from({ length: RACERS }, async (_, i) => {
        const at = i % 2 === 0 ? a : b;
        return { at, ...(await refresh(at, original.refresh_token!, {}, APP)) };
      }),
    );
    const winners = results.filter((r) => r.status === 200);
    assert.equal(winners.length, 1, `${winners.length} refreshes succeeded`);
    for (const loser of results.filter((r) => r.status !== 200)) {
      assert.equal(loser.status, 400, JSON.stringify(loser.body));
      assert.equal(loser.body.error, "invalid_grant");
    }
    // No loser got a token, so the winner's is the only chain; it lives on
    // both instances and goes on through the one the winner did not use.
    const winner = winners[0]!;
    const other = winner.at === a ? b : a;
    assert.equal((await introspect(other, winner.body.access_token)).active, true);
    const next = await refreshGrant(other, winner.body.refresh_token);
    assert.equal((await introspect(winner.at, next.access_token)).active, true);
    // The original is spent for good: refused again, and (inside the grace window) the chain survives that.
    assert.equal((await refresh(other, original.refresh_token!, {}, APP)).body.error, "invalid_grant");
    assert.equal((await introspect(a, next.access_token)).active, true);
    assert.equal((await introspect(b, next.access_token)).active, true);
  });

  it("redeems on B a code issued through A, once: a replay on A is refused and revokes the tokens", async () => {
    const { verifier, challenge } = pkcePair();
    const { location } = await signIn(a, { scope: "openid profile", code_challenge: challenge, code_challenge_method: "S256", nonce: "n-ab", state: "s-ab" });
    const tokens = await redeemCode(b, location, verifier, "s-ab", "n-ab");
    assert.equal(oauth.getValidatedIdTokenClaims(tokens)!.preferred_username, TEST_USER.name);
    assert.equal((await introspect(a, tokens.access_token)).active, true);

    const replay = await postForm(serverOf(a).token_endpoint!, {
      grant_type: "authorization_code", code: location.searchParams.get("code")!, code_verifier: verifier, client_id: APP.clientId,
    });
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, "invalid_grant");
    // The replay revokes what the code gave, for B too.
    assert.equal((await introspect(b, tokens.access_token)).active, false);
  });

  it("finishes on B the sign-in form A showed (the pending request is shared)", async () => {
    const { verifier, challenge } = pkcePair();
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(a.url, { code_challenge: challenge, code_challenge_method: "S256", state: "s-form" }), jar);
    assert.equal(page.status, 200);
    const res = await submit(`${b.url}/login`, { ...loginFormFields(await page.text()), username: TEST_USER.name, password: TEST_USER.password }, jar);
    assert.equal(res.status, 303, b.stderr());
    const tokens = await redeemCode(a, new URL(res.headers.get("location")!), verifier, "s-form");
    assert.equal((await introspect(b, tokens.access_token)).active, true);
  });

  it("keeps a browser session signed in on A valid on B, and a sign-out on B ends it on A", async () => {
    const { jar } = await signIn(a);
    const { verifier, challenge } = pkcePair();
    // No login page on B: the session cookie A set is enough.
    const atB = await browse(authorizeUrl(b.url, { code_challenge: challenge, code_challenge_method: "S256", state: "s-sso" }), jar);
    assert.equal(atB.status, 303, b.stderr());
    await redeemCode(b, new URL(atB.headers.get("location")!), verifier, "s-sso");

    // The old cookie, kept past the sign-out, is refused on A: the session itself is gone.
    const session = `${SESSION_COOKIE}=${jar.get(SESSION_COOKIE)!}`;
    assert.equal((await confirmSignOut(b.url, jar)).status, 200); // the user confirms the sign-out (issue 24)
    const atA = await fetch(authorizeUrl(a.url), { redirect: "manual", headers: { cookie: session } });
    assert.equal(atA.status, 200, "A should show the login page again");
    assert.ok(loginFormFields(await atA.text()));
  });
}, SHARED_BACKENDS);
