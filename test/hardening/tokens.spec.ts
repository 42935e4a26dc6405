import assert from "node:assert/strict";
import { createHmac, createPublicKey } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { getJson, isActive, passwordTokens, type Tokens } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP } from "../support/server.js";

const b64url = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** A JWT assembled by hand: any header, any claims, any signature. */
function compact(header: Record<string, unknown>, claims: JWTPayload, sign: (input: string) => string): string {
  const input = `${b64url(header)}.${b64url(claims)}`;
  return `${input}.${sign(input)}`;
}

describe("tokens that are not ours, or no longer (or not yet) valid", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  let genuine: Tokens;
  let header: Record<string, unknown>;
  let claims: JWTPayload;
  /** Signs with the server's own current private key: a real signature on claims the server never issued. */
  let signAsServer: (claims: JWTPayload, kid?: string) => Promise<string>;

  before(async () => {
    server = await startTestServer({ clock });
    genuine = await passwordTokens(server, { scope: "openid profile" });
    header = decodeProtectedHeader(genuine.access_token) as Record<string, unknown>;
    claims = decodeJwt(genuine.access_token);
    signAsServer = async (c, kid) => {
      const key = await server.domain.keys.signingKey();
      return new SignJWT(c).setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: kid ?? key.kid }).sign(key.key);
    };
  });
  after(() => server.close());

  /** Each entry builds one bad token; every door must refuse it, and revoking it must change nothing. */
  const FORGERIES: Array<{ name: string; make: () => Promise<string> }> = [
    {
      name: "forged: claims changed under the original signature",
      make: async () => {
        const [h, , s] = genuine.access_token.split(".");
        return `${h}.${b64url({ ...claims, sub: "someone-else", scope: "openid profile email address phone" })}.${s}`;
      },
    },
    {
      name: "re-signed with another key under our kid",
      make: async () => {
        const { privateKey } = await generateKeyPair("RS256");
        return new SignJWT(claims).setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: header.kid as string }).sign(privateKey);
      },
    },
    { name: "alg: none", make: async () => compact({ alg: "none", typ: "at+jwt" }, claims, () => "") },
    {
      name: "HS256 keyed with our public key (PEM and JWK)",
      make: async () => {
        const { keys } = (await getJson(`${server.url}/.well-known/jwks`)).body as { keys: Array<Record<string, string>> };
        const pem = createPublicKey({ key: keys[0]!, format: "jwk" }).export({ type: "spki", format: "pem" }).toString();
        return compact({ alg: "HS256", typ: "at+jwt", kid: header.kid }, claims, (input) => createHmac("sha256", pem).update(input).digest("base64url"));
      },
    },
    {
      name: "wrong kid: signed by us, naming a key we do not have",
      make: async () => signAsServer(claims, "not-a-key-of-ours"),
    },
    {
      name: "wrong issuer: signed by us",
      make: async () => signAsServer({ ...claims, iss: "https://evil.example", jti: "x1" }),
    },
    {
      name: "wrong audience: signed by us, for another client",
      make: async () => signAsServer({ ...claims, aud: "client-other", client_id: "client-other", azp: "client-other", jti: "x2" }),
    },
    {
      name: "expired: signed by us, exp in the past",
      make: async () => signAsServer({ ...claims, iat: claims.iat! - 7200, nbf: claims.nbf! - 7200, exp: claims.iat! - 3600, jti: "x3" }),
    },
    {
      name: "not yet valid: signed by us, nbf and iat in the future",
      make: async () => signAsServer({ ...claims, iat: claims.iat! + 3600, nbf: claims.iat! + 3600, exp: claims.exp! + 3600, jti: "x4" }),
    },
    { name: "an ID token presented as an access token", make: async () => genuine.id_token! },
    {
      name: "signed by the attacker's own key, sent along in a jwk header",
      make: async () => {
        const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
        return new SignJWT(claims).setProtectedHeader({ alg: "RS256", typ: "at+jwt", jwk: await exportJWK(publicKey) }).sign(privateKey);
      },
    },
  ];

  for (const forgery of FORGERIES) {
    it(`refuses ${forgery.name}: introspection inactive, userinfo and get-account 401, revocation a no-op`, async () => {
      const token = await forgery.make();
      assert.notEqual(token, genuine.access_token);
      await expectRefused(token);
      await expectRevocationIsNoOp(token);
    });
  }

  it("refuses a genuine token once it has expired, everywhere (injected clock)", async () => {
    const token = (await passwordTokens(server)).access_token;
    assert.equal(await isActive(server, token), true);
    clock.advanceSeconds(TEST_APP.expireInHours * 3600);
    try {
      await expectRefused(token);
    } finally {
      clock.advanceSeconds(-TEST_APP.expireInHours * 3600);
    }
  });

  it("refuses a genuine token before the time it was issued (a clock set back), everywhere", async () => {
    const token = (await passwordTokens(server)).access_token;
    clock.advanceSeconds(-120);
    try {
      await expectRefused(token);
    } finally {
      clock.advanceSeconds(120);
    }
    assert.equal(await isActive(server, token), true, "valid again once its time has come");
  });

  const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };

  /** Introspection says inactive; userinfo (both carriers) and get-account say 401 invalid_token. */
  async function expectRefused(token: string): Promise<void> {
    const introspection = await postForm(`${server.url}/api/login/oauth/introspect`, { token }, basic);
    assert.equal(introspection.status, 200);
    assert.deepEqual(introspection.body, { active: false });

    for (const path of ["/api/userinfo", "/api/get-account"]) {
      const res = await getJson(`${server.url}${path}`, { authorization: `Bearer ${token}` });
      assert.equal(res.status, 401, `${path}: ${res.text}`);
      assert.equal(res.body.error, "invalid_token", path);
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer realm="identity", error="invalid_token"/, path);
    }
    const byQuery = await getJson(`${server.url}/api/userinfo?accessToken=${encodeURIComponent(token)}`);
    assert.equal(byQuery.status, 401);
    assert.equal(byQuery.body.error, "invalid_token");
  }

  /** RFC 7009 §2.2: 200 whatever the token, and the genuine token it imitates stays valid. */
  async function expectRevocationIsNoOp(token: string): Promise<void> {
    const revoked = await postForm(`${server.url}/api/login/oauth/revoke`, { token, token_type_hint: "access_token" }, basic);
    assert.equal(revoked.status, 200);
    assert.equal(await isActive(server, genuine.access_token), true, "revoking a forgery leaves the real token alone");
    assert.equal((await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${genuine.access_token}` })).status, 200);
  }
});
