import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";

const GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const AUDIENCE = "identity-service";

/** A platform (a Kubernetes cluster, a CI system) that signs its workloads' tokens and serves discovery and a JWKS. */
async function startFakeIssuer() {
  const signing = { kid: "k1", ...(await generateKeyPair("ES256", { extractable: true })) };
  let keys: JWK[] = [{ ...(await exportJWK(signing.publicKey)), kid: signing.kid, alg: "ES256" }];
  const reads = { discovery: 0, jwks: 0 };
  let issuer = "";
  const server: Server = createServer((req, res) => {
    const body = req.url === "/.well-known/openid-configuration" ? (reads.discovery++, { issuer, jwks_uri: `${issuer}/keys` }) : req.url === "/keys" ? (reads.jwks++, { keys }) : undefined;
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    reads,
    signing,
    /** A token for `sub` as the platform issues it; `over` changes claims. */
    token: (sub: string, over: Record<string, unknown> = {}, key: { kid: string; privateKey: CryptoKey } = signing) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, sub, aud: AUDIENCE, iat: now, exp: now + 600, jti: randomUUID(), ...over })
        .setProtectedHeader({ alg: "ES256", kid: key.kid })
        .sign(key.privateKey);
    },
    rotate: async () => {
      const next = { kid: "k2", ...(await generateKeyPair("ES256", { extractable: true })) };
      keys = [...keys, { ...(await exportJWK(next.publicKey)), kid: next.kid, alg: "ES256" }];
      return next;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("workload identity: the JWT bearer grant (RFC 7523 §2.1)", () => {
  let server: RunningServer;
  let platform: Awaited<ReturnType<typeof startFakeIssuer>>;
  // The service's clock, moved by hand past the 30 s between re-reads; the platform signs with the real one.
  // Made when the suite starts, not when the file loads: in a whole run that is minutes later.
  let clock: FakeClock;
  const WORKLOAD = { name: "workloads", clientId: "client-workloads", grantTypes: ["client_credentials"] };

  before(async () => {
    clock = new FakeClock();
    platform = await startFakeIssuer();
    server = await startTestServer({
      clock,
      config: {
        applications: [TEST_APP, WORKLOAD],
        users: [TEST_USER],
        trustedIssuers: [
          // No jwksUri: read from the issuer's discovery. allowInsecureUrls: the fake platform is on this machine, over http.
          { name: "cluster", issuer: platform.issuer, audience: AUDIENCE, application: WORKLOAD.name, subjects: ["system:serviceaccount:billing:*", "ci-job-42"], allowInsecureUrls: true },
        ],
      },
    });
  });
  after(async () => {
    await server.close();
    await platform.close();
  });

  const grant = (assertion: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<HttpResult> =>
    postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: GRANT, assertion, ...extra }, headers);
  const refusedAsGrant = (res: HttpResult, why: string) => {
    assert.equal(res.status, 400, `${why}: ${res.text}`);
    assert.equal(res.body.error, "invalid_grant", why);
  };

  it("gives a workload a token with openid-client's genericGrantRequest: sub the workload's, client_id the application's, no secret", async () => {
    const config = await oidc.discovery(new URL(server.issuer), WORKLOAD.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    assert.ok(config.serverMetadata().grant_types_supported?.includes(GRANT));
    const tokens = await oidc.genericGrantRequest(config, GRANT, { assertion: await platform.token("system:serviceaccount:billing:api") });
    const claims = decodeJwt(tokens.access_token);
    assert.equal(claims.sub, "system:serviceaccount:billing:api");
    assert.equal(claims.client_id, WORKLOAD.clientId);
    assert.equal(tokens.refresh_token, undefined);
    const seen = (await postForm(`${server.url}/api/login/oauth/introspect`, { token: tokens.access_token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) })).body;
    assert.equal(seen.active, true);
    assert.equal(seen.sub, "system:serviceaccount:billing:api");
    // Without client_id too.
    assert.equal((await grant(await platform.token("ci-job-42"))).status, 200);
  });

  it("reads discovery and the JWKS once, and again on an unknown kid at most once per 30 s", async () => {
    assert.equal((await grant(await platform.token("ci-job-42"))).status, 200);
    const before = { ...platform.reads };
    for (let i = 0; i < 3; i++) assert.equal((await grant(await platform.token("ci-job-42"))).status, 200);
    assert.deepEqual(platform.reads, before, "cached");
    const next = await platform.rotate();
    refusedAsGrant(await grant(await platform.token("ci-job-42", {}, next)), "a kid read less than 30 s ago is not read again");
    assert.equal(platform.reads.jwks, before.jwks);
    clock.advanceSeconds(30);
    assert.equal((await grant(await platform.token("ci-job-42", {}, next))).status, 200);
    assert.equal(platform.reads.jwks, before.jwks + 1);
    assert.equal(platform.reads.discovery, before.discovery, "discovery is not read again");
  });

  it("refuses an untrusted issuer, an expired or long-lived assertion, a future or missing iat, a wrong aud, a subject not let in, a replay", async () => {
    const now = Math.floor(Date.now() / 1000);
    const replayed = await platform.token("ci-job-42");
    assert.equal((await grant(replayed)).status, 200);
    const cases: Record<string, string> = {
      "untrusted issuer": await platform.token("ci-job-42", { iss: "https://evil.example" }),
      expired: await platform.token("ci-job-42", { iat: now - 900, exp: now - 300 }),
      "not yet valid": await platform.token("ci-job-42", { nbf: now + 600 }),
      "two hours to live": await platform.token("ci-job-42", { exp: now + 7200 }),
      "iat in the future": await platform.token("ci-job-42", { iat: now + 300 }),
      "no iat": await platform.token("ci-job-42", { iat: undefined }),
      "aud elsewhere": await platform.token("ci-job-42", { aud: "another-service" }),
      "subject not let in": await platform.token("system:serviceaccount:payments:api"),
      "prefix without its star": await platform.token("ci-job-420"),
      replayed,
    };
    for (const [why, assertion] of Object.entries(cases)) refusedAsGrant(await grant(assertion), why);
  });

  it("refuses alg none, HS256 keyed with the platform's public key, a client_id not the entry's, and a client secret", async () => {
    const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const now = Math.floor(Date.now() / 1000);
    const payload = part({ iss: platform.issuer, sub: "ci-job-42", aud: AUDIENCE, iat: now, exp: now + 300 });
    refusedAsGrant(await grant(`${part({ alg: "none" })}.${payload}.`), "alg none");
    const publicKey = JSON.stringify(await exportJWK(platform.signing.publicKey));
    const hsInput = `${part({ alg: "HS256", kid: platform.signing.kid })}.${payload}`;
    refusedAsGrant(await grant(`${hsInput}.${createHmac("sha256", publicKey).update(hsInput).digest("base64url")}`), "HS256 with the public key");
    refusedAsGrant(await grant(await platform.token("ci-job-42"), { client_id: TEST_APP.clientId }), "another application's client_id");
    refusedAsGrant(await grant(await platform.token("ci-job-42"), {}, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) }), "a client secret");
  });

  it("over gRPC (grpc-js): the assertion in TokenRequest", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const tokens = await grpc.call("TokenService", "Token", { grant_type: GRANT, assertion: await platform.token("ci-job-42") });
      assert.equal(decodeJwt(tokens.access_token).sub, "ci-job-42");
      const refused = await grpc.call("TokenService", "Token", { grant_type: GRANT, assertion: await platform.token("someone-else") }).then(() => undefined, (e: unknown) => e);
      assert.equal(oauthErrorOf(refused), "invalid_grant");
    } finally {
      grpc.close();
    }
  });
});
