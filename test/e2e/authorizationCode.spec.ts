import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import { parseServeConfig } from "../../src/app/config.js";
import { sha256 } from "../../src/oauth/secrets.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, pkcePair, signIn } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { describeEachDatabase, type DatabaseContext } from "../support/databases.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const OTHER_APP = { name: "code-grant-other", clientId: "code-grant-client-2", clientSecret: "secret-2-of-code-grant-client-2", redirectUris: TEST_APP.redirectUris };
const CALLBACK = TEST_APP.redirectUris[0]!;

// On PostgreSQL the races are real: many connections on one row.
describeEachDatabase("authorization_code grant", (ctx) => codeGrantSuite(ctx));

function codeGrantSuite(ctx: DatabaseContext) {
  const clock = new FakeClock();
  let server: RunningServer;
  let jar: CookieJar;

  before(async () => {
    server = await startTestServer({ clock, database: ctx.url, config: { applications: [TEST_APP, OTHER_APP], users: [TEST_USER] } });
    ({ jar } = await signIn(server));
  });
  after(() => server.close());

  /** A fresh code from the signed-in browser session (no form, no password hashing). */
  async function code(params: Record<string, string> = {}): Promise<string> {
    const res = await browse(authorizeUrl(server.url, params), jar);
    assert.equal(res.status, 303);
    return new URL(res.headers.get("location")!).searchParams.get("code")!;
  }

  const exchange = (fields: Record<string, string>, authorization?: string) =>
    postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "authorization_code", ...fields },
      authorization ? { authorization } : {},
    );
  const withSecret = { client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret };
  const introspect = async (token: string) =>
    (
      await postForm(`${server.url}/api/login/oauth/introspect`, { token }, {
        authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret),
      })
    ).body.active;

  it("exchanges a code for tokens with a verifiable OIDC ID token", async () => {
    const res = await exchange({ ...withSecret, code: await code({ scope: "openid profile email address phone", nonce: "n-1" }) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const body = res.body;
    assert.equal(body.token_type, "Bearer");
    assert.equal(body.expires_in, 3600);
    assert.equal(body.scope, "openid profile email address phone");
    assert.ok(body.refresh_token);
    const jwks = createLocalJWKSet((await (await fetch(`${server.url}/.well-known/jwks`)).json()) as JSONWebKeySet);
    const { payload, protectedHeader } = await jwtVerify(body.id_token, jwks, {
      issuer: server.issuer,
      audience: TEST_APP.clientId,
      currentDate: new Date(clock.now()),
    });
    assert.equal(protectedHeader.alg, "RS256");
    assert.equal(payload.nonce, "n-1");
    assert.equal(payload.azp, TEST_APP.clientId);
    assert.equal(typeof payload.auth_time, "number");
    assert.equal(payload.name, TEST_USER.displayName);
    assert.equal(payload.preferred_username, TEST_USER.name);
    assert.equal(payload.picture, TEST_USER.avatar);
    assert.equal(payload.email, TEST_USER.email);
    assert.equal(payload.email_verified, false);
    assert.deepEqual(payload.address, { formatted: TEST_USER.address });
    assert.equal(payload.phone_number, TEST_USER.phone);
  });

  it("lets a PKCE client leave client_secret out, but checks it when sent", async () => {
    const { verifier, challenge } = pkcePair();
    const pkce = { code_challenge: challenge, code_challenge_method: "S256" };
    const wrongSecret = await exchange({ client_id: TEST_APP.clientId, client_secret: "nope", code: await code(pkce), code_verifier: verifier });
    assert.equal(wrongSecret.status, 401);
    assert.equal(wrongSecret.body.error, "invalid_client");
    const publicClient = await exchange({ client_id: TEST_APP.clientId, code: await code(pkce), code_verifier: verifier });
    assert.equal(publicClient.status, 200);
    assert.ok(publicClient.body.id_token);
    const confidential = await exchange({ code: await code(pkce), code_verifier: verifier }, basicAuth(TEST_APP.clientId, TEST_APP.clientSecret));
    assert.equal(confidential.status, 200);
  });

  it("requires client authentication without PKCE", async () => {
    const res = await exchange({ client_id: TEST_APP.clientId, code: await code() });
    assert.equal(res.status, 401);
    assert.equal(res.body.error, "invalid_client");
  });

  it("refuses a PKCE downgrade: a code_verifier for a code issued without a challenge", async () => {
    const res = await exchange({ ...withSecret, code: await code(), code_verifier: pkcePair().verifier });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_grant");
  });

  it("refuses a wrong or missing verifier without burning the code", async () => {
    const { verifier, challenge } = pkcePair();
    const issued = await code({ code_challenge: challenge, code_challenge_method: "S256" });
    const wrong = await exchange({ client_id: TEST_APP.clientId, code: issued, code_verifier: pkcePair().verifier });
    assert.equal(wrong.body.error, "invalid_grant");
    const missing = await exchange({ ...withSecret, code: issued });
    assert.equal(missing.body.error, "invalid_grant");
    assert.equal((await exchange({ client_id: TEST_APP.clientId, code: issued, code_verifier: verifier })).status, 200);
  });

  it("refuses an expired code", async () => {
    const issued = await code();
    clock.advanceSeconds(301);
    const res = await exchange({ ...withSecret, code: issued });
    assert.equal(res.body.error, "invalid_grant");
    assert.match(res.body.error_description, /expired/);
  });

  it("refuses a code presented by another client, or with another redirect_uri", async () => {
    const issued = await code();
    const foreign = await exchange({ client_id: OTHER_APP.clientId, client_secret: OTHER_APP.clientSecret, code: issued });
    assert.equal(foreign.body.error, "invalid_grant");
    const otherRedirect = await exchange({ ...withSecret, code: issued, redirect_uri: "http://127.0.0.1:9999/other" });
    assert.equal(otherRedirect.body.error, "invalid_grant");
    assert.equal((await exchange({ ...withSecret, code: issued, redirect_uri: CALLBACK })).status, 200);
  });

  it("refuses an unknown code", async () => {
    const res = await exchange({ ...withSecret, code: "not-a-code" });
    assert.equal(res.body.error, "invalid_grant");
  });

  it("revokes the tokens issued from a code when the code is replayed", async () => {
    const issued = await code();
    const first = await exchange({ ...withSecret, code: issued });
    assert.equal(first.status, 200);
    assert.equal(await introspect(first.body.access_token), true);

    const replay = await exchange({ ...withSecret, code: issued });
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, "invalid_grant");
    assert.equal(await introspect(first.body.access_token), false);
    const refresh = await server.store.refreshTokens.findByHash(sha256(first.body.refresh_token));
    assert.notEqual(refresh?.revokedAt, null);
  });

  it("gives tokens to exactly one of 50 concurrent redemptions, and revokes them", async () => {
    const issued = await code();
    const results = await Promise.all(Array.from({ length: 50 }, () => exchange({ ...withSecret, code: issued })));
    const winners = results.filter((r) => r.status === 200);
    assert.equal(winners.length, 1);
    assert.ok(results.filter((r) => r.status !== 200).every((r) => r.status === 400 && r.body.error === "invalid_grant"));
    // The 49 others were replays: whatever the interleaving, the winner's tokens end up revoked.
    assert.equal(await introspect(winners[0]!.body.access_token), false);
  });

  it("serves the same exchange to RPC callers (Connect protocol)", async () => {
    const client = createClient(TokenService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const res = await client.token({ grantType: "authorization_code", clientId: TEST_APP.clientId, clientSecret: TEST_APP.clientSecret, code: await code() });
    assert.equal(res.tokenType, "Bearer");
    assert.ok(res.idToken);
    await assert.rejects(
      client.token({ grantType: "authorization_code", clientId: TEST_APP.clientId, clientSecret: TEST_APP.clientSecret, code: "used-or-unknown" }),
      /authorization code is invalid/,
    );
  });

  it("keeps codes at most 10 minutes", () => {
    assert.equal(parseServeConfig(["--code-ttl-seconds", "600"], {}).codeTtlSeconds, 600);
    assert.throws(() => parseServeConfig(["--code-ttl-seconds", "601"], {}), /at most 600/);
  });
}
