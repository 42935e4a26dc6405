import assert from "node:assert/strict";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash, randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { sendJsonBody, type UpstreamRequest } from "../support/fakeUpstream.js";
import { postJson } from "../support/oauth.js";
import { RecordingLogger, startTestServer, TEST_APP } from "../support/server.js";

const CLIENT = { clientId: "oidc-client", clientSecret: "oidc secret" };
const CODE = "oidc-code-1";

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function newKey(kid = randomBytes(4).toString("hex")): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
}

/** What the next ID token says, and with which key it is signed; a test changes one thing. */
interface TokenPlan {
  claims: Record<string, unknown>;
  iss?: string;
  aud?: string | string[];
  key?: SigningKey;
}

describe("sign-in through an OIDC provider (discovery, JWKS, ID token)", () => {
  const requests: UpstreamRequest[] = [];
  let origin: string;
  let upstream: http.Server;
  let published: SigningKey[];
  let plan: TokenPlan;
  let nonce: string | undefined;
  let server: RunningServer;
  let logs: RecordingLogger;
  let userinfoSub: string | undefined;

  async function idToken(): Promise<string> {
    const key = plan.key ?? published[0]!;
    return new SignJWT({ nonce, ...plan.claims })
      .setProtectedHeader({ alg: "ES256", kid: key.kid })
      .setIssuer(plan.iss ?? origin)
      .setAudience(plan.aud ?? CLIENT.clientId)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(key.privateKey);
  }

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void | Promise<void>> = {
    "GET /.well-known/openid-configuration": (_req, res) =>
      sendJsonBody(res, 200, {
        issuer: origin,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        jwks_uri: `${origin}/jwks`,
        userinfo_endpoint: `${origin}/userinfo`,
        response_types_supported: ["code"],
        authorization_response_iss_parameter_supported: true,
      }),
    "GET /jwks": (_req, res) => sendJsonBody(res, 200, { keys: published.map((k) => k.jwk) }),
    "GET /userinfo": (req, res) =>
      req.headers.authorization === "Bearer oidc-at"
        ? sendJsonBody(res, 200, { sub: userinfoSub ?? plan.claims.sub, picture: "https://idp.example/olive.png", name: "Userinfo Name" })
        : sendJsonBody(res, 401, { error: "invalid_token" }),
    "POST /token": async (_req, res) => sendJsonBody(res, 200, { access_token: "oidc-at", token_type: "Bearer", expires_in: 300, id_token: await idToken() }),
  };

  before(async () => {
    upstream = http.createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        const path = new URL(req.url ?? "/", "http://fake").pathname;
        requests.push({ method: req.method ?? "", path, headers: req.headers, body });
        const route = routes[`${req.method} ${path}`];
        if (route) void route(req, res);
        else res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    published = [await newKey()];
    logs = new RecordingLogger();
    server = await startTestServer({
      logger: logs,
      config: {
        applications: [{ ...TEST_APP, providers: ["oidc", "oidc-userinfo"] }],
        providers: [
          { name: "oidc", type: "OIDC", displayName: "Acme OIDC", ...CLIENT, issuer: origin, trustEmail: true },
          { name: "oidc-userinfo", type: "OIDC", ...CLIENT, issuer: origin, userInfoUrl: `${origin}/userinfo` },
        ],
      },
    });
  });
  after(async () => {
    await server?.close();
    upstream?.closeAllConnections();
    await new Promise<void>((resolve) => upstream?.close(() => resolve()));
  });
  beforeEach(() => {
    requests.length = 0;
    nonce = undefined;
    userinfoSub = undefined;
    plan = { claims: { sub: `sub-${randomBytes(4).toString("hex")}`, email: "oidc@example.com", email_verified: true, name: "Olive OIDC" } };
  });

  async function roundTrip(callbackParams: (state: string) => Record<string, string> = (state) => ({ code: CODE, state, iss: origin }), provider = "oidc") {
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(server.url, { scope: "openid" }), jar);
    const res = await submit(`${server.url}/login/oauth/provider/${provider}`, loginFormFields(await page.text()), jar);
    assert.equal(res.status, 303);
    const authUrl = new URL(res.headers.get("location")!);
    nonce = authUrl.searchParams.get("nonce") ?? undefined;
    const state = authUrl.searchParams.get("state")!;
    const callback = await browse(`${server.url}/callback?${new URLSearchParams(callbackParams(state))}`, jar);
    return { authUrl, callback };
  }

  const userCount = async () => (await server.domain.userAdmin.list()).length;

  it("discovers the endpoints, sends PKCE S256 and a nonce, verifies the ID token and signs the user in", async () => {
    const { authUrl, callback } = await roundTrip();
    assert.equal(`${authUrl.origin}${authUrl.pathname}`, `${origin}/authorize`);
    assert.equal(authUrl.searchParams.get("scope"), "openid profile email");
    assert.equal(authUrl.searchParams.get("code_challenge_method"), "S256");
    assert.match(nonce ?? "", /^[A-Za-z0-9_-]{43}$/);
    assert.equal(callback.status, 303, await callback.text());
    assert.ok(new URL(callback.headers.get("location")!).searchParams.get("code"));
    const token = requests.find((r) => r.path === "/token")!;
    const verifier = new URLSearchParams(token.body).get("code_verifier")!;
    assert.equal(createHash("sha256").update(verifier).digest("base64url"), authUrl.searchParams.get("code_challenge"));
    const link = await server.domain.store.federatedIdentities.find({ provider: "oidc", externalIdType: "sub", externalId: String(plan.claims.sub) });
    const user = (await server.domain.store.users.findById(link!.userId))!;
    assert.deepEqual([user.displayName, user.email, user.emailVerified], ["Olive OIDC", "oidc@example.com", true]);
  });

  it("reads the JWKS again for an unknown kid (key rotation)", async () => {
    const rotated = await newKey();
    published = [rotated, ...published];
    plan.key = rotated;
    const { callback } = await roundTrip();
    assert.equal(callback.status, 303, await callback.text());
    assert.equal(requests.filter((r) => r.path === "/jwks").length, 1);
  });

  it("adds the UserInfo claims where the provider sets userInfoUrl; the ID token's win; another sub is refused", async () => {
    const { callback } = await roundTrip(undefined, "oidc-userinfo");
    assert.equal(callback.status, 303, await callback.text());
    assert.equal(requests.find((r) => r.path === "/userinfo")?.headers.authorization, "Bearer oidc-at");
    const link = await server.domain.store.federatedIdentities.find({ provider: "oidc-userinfo", externalIdType: "sub", externalId: String(plan.claims.sub) });
    const user = (await server.domain.store.users.findById(link!.userId))!;
    assert.deepEqual([user.displayName, user.avatar, user.emailVerified], ["Olive OIDC", "https://idp.example/olive.png", false]);

    userinfoSub = "someone-else";
    const refused = await roundTrip(undefined, "oidc-userinfo");
    assert.equal(refused.callback.status, 502);
    assert.match(await refused.callback.text(), /UserInfo endpoint describes another user than the ID token/);
  });

  it("CompleteLogin takes the callback's iss, which this provider promised", async () => {
    const begin = async () => {
      const begun = await postJson(`${server.url}/api/federation/begin-login`, { provider: "oidc" });
      assert.equal(begun.status, 200);
      nonce = new URL(begun.body.auth_url).searchParams.get("nonce") ?? undefined;
      return { state: begun.body.state, code: CODE, login_secret: begun.body.login_secret };
    };
    const withoutIss = await postJson(`${server.url}/api/federation/complete-login`, await begin());
    assert.equal(withoutIss.status, 403);
    assert.match(JSON.stringify(withoutIss.body), /another issuer than Acme OIDC/);
    const done = await postJson(`${server.url}/api/federation/complete-login`, { ...(await begin()), iss: origin });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.identity.external_id, plan.claims.sub);
  });

  const REFUSALS: [string, () => Promise<void> | void, RegExp, ((state: string) => Record<string, string>)?][] = [
    ["a bad signature", async () => void (plan.key = { ...(await newKey(published[0]!.kid)) }), /ID token has a signature that does not verify/],
    ["a wrong aud", () => void (plan.aud = "someone-else"), /ID token is not valid: its aud claim/],
    ["a wrong nonce", () => void (plan.claims.nonce = "not-the-nonce"), /ID token is not valid: its nonce claim does not match/],
    ["a wrong iss in the ID token", () => void (plan.iss = "https://evil.example"), /ID token is not valid: its iss claim/],
    ["a wrong azp", () => void (plan.claims.azp = "someone-else"), /ID token is not valid: its azp claim does not match/],
    ["a wrong iss at the callback (RFC 9207)", () => {}, /the answer names another issuer than Acme OIDC/, (state) => ({ code: CODE, state, iss: "https://evil.example" })],
    ["no iss at the callback, which the provider promised", () => {}, /the answer names another issuer than Acme OIDC/, (state) => ({ code: CODE, state })],
  ];
  for (const [what, arrange, message, params] of REFUSALS) {
    it(`ends on an error page naming the provider, and the client gets no code, after ${what}`, async () => {
      await arrange();
      const before = await userCount();
      const { callback } = await roundTrip(params);
      assert.ok(callback.status >= 400, `status ${callback.status}`);
      assert.equal(callback.headers.get("location"), null, "no redirect to the client");
      const text = (await callback.text()).replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
      assert.match(text, /Acme OIDC/);
      assert.match(text, message);
      assert.equal(await userCount(), before);
    });
  }
});
