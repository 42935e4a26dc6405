import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import * as oidc from "openid-client";
import { CC_ONLY_APP, postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";
import type { RunningServer } from "../../src/app/server.js";

const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const HMAC_SECRET = "a-client-secret-of-more-than-32-characters-for-hs256";

type Alg = "RS256" | "PS256" | "ES256" | "Ed25519";
const ALGS: Alg[] = ["RS256", "PS256", "ES256", "Ed25519"];

interface KeyPair {
  alg: Alg;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function keyPair(alg: Alg): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid: `${alg}-key`, alg: alg === "Ed25519" ? "EdDSA" : alg } };
}

/** A client assertion as RFC 7523 §3 describes it; `over` changes claims, `header` the protected header. */
async function assertion(
  clientId: string,
  audience: string,
  key: KeyPair,
  over: Record<string, unknown> = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), iat: now, exp: now + 60, ...over })
    .setProtectedHeader({ alg: key.alg, kid: key.publicJwk.kid })
    .sign(key.privateKey);
}

/** A JWT signed by hand: any header, any HMAC key (attacks). */
function handSigned(header: Record<string, unknown>, payload: Record<string, unknown>, hmacKey?: Buffer | string): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const input = `${part(header)}.${part(payload)}`;
  const signature = hmacKey === undefined ? "" : createHmac("sha256", hmacKey).update(input).digest("base64url");
  return `${input}.${signature}`;
}

describe("JWT client authentication (RFC 7523 §2.2, OIDC Core §9)", () => {
  let server: RunningServer;
  let keys: Record<Alg, KeyPair>;
  let tokenUrl: string;

  const PKJ_APP = { name: "pkj", clientId: "client-pkj", grantTypes: ["client_credentials", "device_code"], tokenEndpointAuthMethod: "private_key_jwt", redirectUris: ["http://127.0.0.1:9999/pkj"] };
  const CSJ_APP = { name: "csj", clientId: "client-csj", clientSecret: HMAC_SECRET, grantTypes: ["client_credentials"], tokenEndpointAuthMethod: "client_secret_jwt" };

  before(async () => {
    keys = Object.fromEntries(await Promise.all(ALGS.map(async (alg) => [alg, await keyPair(alg)]))) as Record<Alg, KeyPair>;
    server = await startTestServer({
      config: {
        applications: [TEST_APP, CC_ONLY_APP, { ...PKJ_APP, jwks: { keys: ALGS.map((a) => keys[a].publicJwk) } }, CSJ_APP],
        users: [TEST_USER],
      },
      // Budgets out of the way: every refusal here must be for the reason its test names (budgets: test/hardening/clientAssertionAttacks.spec.ts).
      overrides: { clientAuthMaxFailures: 1000, clientAuthMaxFailuresPerIp: 1000 },
    });
    tokenUrl = `${server.issuer}/api/login/oauth/access_token`;
  });
  after(() => server.close());

  const discover = (clientId: string, auth: oidc.ClientAuth) =>
    oidc.discovery(new URL(server.issuer), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });

  const withAssertion = (clientAssertion: string, extra: Record<string, string> = {}) =>
    postForm(tokenUrl, { grant_type: "client_credentials", client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion, ...extra });

  const refusedAsClient = (res: HttpResult) => {
    assert.equal(res.status, 401, res.text);
    assert.equal(res.body.error, "invalid_client");
  };

  it("is listed in discovery, methods and algorithms, never none", async () => {
    const config = await discover(PKJ_APP.clientId, oidc.None());
    const meta = config.serverMetadata();
    for (const field of ["token_endpoint_auth_methods_supported", "introspection_endpoint_auth_methods_supported", "revocation_endpoint_auth_methods_supported"] as const) {
      assert.ok((meta[field] as string[]).includes("private_key_jwt"), field);
      assert.ok((meta[field] as string[]).includes("client_secret_jwt"), field);
    }
    assert.deepEqual(meta.token_endpoint_auth_signing_alg_values_supported, ["RS256", "PS256", "ES256", "EdDSA", "Ed25519", "HS256"]);
    assert.ok(!(meta.token_endpoint_auth_signing_alg_values_supported as string[]).includes("none"));
  });

  for (const alg of ALGS) {
    it(`takes openid-client's PrivateKeyJwt with ${alg} at the token, introspection and revocation endpoints`, async () => {
      const config = await discover(PKJ_APP.clientId, oidc.PrivateKeyJwt(keys[alg].privateKey));
      const tokens = await oidc.clientCredentialsGrant(config);
      assert.ok(tokens.access_token);
      const introspection = await oidc.tokenIntrospection(config, tokens.access_token);
      assert.equal(introspection.active, true);
      assert.equal(introspection.client_id, PKJ_APP.clientId);
      await oidc.tokenRevocation(config, tokens.access_token);
      assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, false);
    });
  }

  it("takes EdDSA as the name of an Ed25519 assertion too", async () => {
    const remap: oidc.ModifyAssertionFunction = (header) => {
      header.alg = "EdDSA";
    };
    const config = await discover(PKJ_APP.clientId, oidc.PrivateKeyJwt(keys.Ed25519.privateKey, { [oidc.modifyAssertion]: remap }));
    assert.ok((await oidc.clientCredentialsGrant(config)).access_token);
  });

  it("takes openid-client's ClientSecretJwt (HS256 with the client's secret)", async () => {
    const config = await discover(CSJ_APP.clientId, oidc.ClientSecretJwt(HMAC_SECRET));
    const tokens = await oidc.clientCredentialsGrant(config);
    assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, true);
  });

  it("takes an assertion whose aud is the endpoint's URL, and no client_id beside it", async () => {
    const res = await withAssertion(await assertion(PKJ_APP.clientId, tokenUrl, keys.ES256));
    assert.equal(res.status, 200, res.text);
  });

  it("authenticates at the device authorization endpoint too, with its URL or the issuer as aud", async () => {
    const url = `${server.issuer}/api/device-auth`;
    const ask = async (aud: string) =>
      postForm(url, { client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(PKJ_APP.clientId, aud, keys.ES256), scope: "openid" });
    const res = await ask(url);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.device_code);
    assert.equal((await ask(server.issuer)).status, 200);
    refusedAsClient(await ask(tokenUrl));
    refusedAsClient(await postForm(url, { client_id: PKJ_APP.clientId }));
  });

  it("at PAR, takes the issuer, the PAR endpoint's URL or the token endpoint's URL as aud (RFC 9126 §2), nothing else", async () => {
    const parUrl = `${server.issuer}/api/oauth/par`;
    const push = async (aud: string) =>
      postForm(parUrl, {
        response_type: "code", redirect_uri: PKJ_APP.redirectUris[0]!, scope: "openid", state: "s",
        client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(PKJ_APP.clientId, aud, keys.ES256),
      });
    for (const aud of [server.issuer, parUrl, tokenUrl]) assert.equal((await push(aud)).status, 201, aud);
    refusedAsClient(await push(`${server.issuer}/api/login/oauth/introspect`));
  });

  it("allows 10 seconds of clock skew: nbf 8 seconds ahead is taken, 20 seconds ahead refused (FAPI 2.0 §5.3.2.1)", async () => {
    const now = Math.floor(Date.now() / 1000);
    const ahead = (seconds: number) => assertion(PKJ_APP.clientId, server.issuer, keys.ES256, { iat: now + seconds, nbf: now + seconds, exp: now + seconds + 60 });
    assert.equal((await withAssertion(await ahead(8))).status, 200);
    refusedAsClient(await withAssertion(await ahead(20)));
  });

  it("refuses the secret of a client registered for a JWT method, and an assertion of a client that uses its secret", async () => {
    refusedAsClient(await postForm(tokenUrl, { grant_type: "client_credentials", client_id: CSJ_APP.clientId, client_secret: HMAC_SECRET }));
    const hmacFor = (clientId: string) => handSigned({ alg: "HS256" }, claims(clientId), CC_ONLY_APP.clientSecret);
    refusedAsClient(await withAssertion(hmacFor(CC_ONLY_APP.clientId)));
  });

  it("refuses a replayed assertion (its jti is used once), 401 invalid_client", async () => {
    const once = await assertion(PKJ_APP.clientId, server.issuer, keys.ES256);
    assert.equal((await withAssertion(once)).status, 200);
    refusedAsClient(await withAssertion(once));
    // Not locked out meanwhile: a fresh assertion still works.
    assert.equal((await withAssertion(await assertion(PKJ_APP.clientId, server.issuer, keys.ES256))).status, 200);
  });

  it("refuses alg none, and HS256 signed with the client's public key", async () => {
    refusedAsClient(await withAssertion(handSigned({ alg: "none" }, claims(PKJ_APP.clientId))));
    // The public key's bytes as the HMAC key: the classic key-confusion forgery.
    const publicPem = JSON.stringify(keys.RS256.publicJwk);
    refusedAsClient(await withAssertion(handSigned({ alg: "HS256", kid: keys.RS256.publicJwk.kid }, claims(PKJ_APP.clientId), publicPem)));
    refusedAsClient(await withAssertion(handSigned({ alg: "HS256" }, claims(PKJ_APP.clientId), keys.RS256.publicJwk.n!)));
  });

  it("refuses wrong claims: iss or sub not the client, a foreign aud, expired, no jti, exp more than 5 minutes ahead, a key not the client's", async () => {
    const now = Math.floor(Date.now() / 1000);
    const id = PKJ_APP.clientId;
    const cases: Record<string, string> = {
      "iss is another client": await assertion(id, server.issuer, keys.ES256, { iss: TEST_APP.clientId }),
      "sub is another client": await assertion(id, server.issuer, keys.ES256, { sub: TEST_APP.clientId }),
      "aud is elsewhere": await assertion(id, "https://other.example", keys.ES256),
      expired: await assertion(id, server.issuer, keys.ES256, { iat: now - 600, exp: now - 300 }),
      "no jti": await assertion(id, server.issuer, keys.ES256, { jti: undefined }),
      "lives 10 minutes": await assertion(id, server.issuer, keys.ES256, { exp: now + 600 }),
      "another key": await assertion(id, server.issuer, { ...(await keyPair("ES256")) }),
    };
    for (const [name, jwt] of Object.entries(cases)) {
      const res = await withAssertion(jwt, { client_id: id });
      assert.equal(res.status, 401, `${name}: ${res.text}`);
      assert.equal(res.body.error, "invalid_client", name);
      assert.doesNotMatch(res.body.error_description, /too many/, name);
    }
    assert.equal((await withAssertion(await assertion(id, server.issuer, keys.ES256))).status, 200, "the right assertion still works");
  });

  it("refuses an unknown assertion type, a client_id that is not the assertion's, and a secret beside an assertion", async () => {
    const jwt = await assertion(PKJ_APP.clientId, server.issuer, keys.ES256);
    refusedAsClient(await postForm(tokenUrl, { grant_type: "client_credentials", client_assertion_type: "urn:other", client_assertion: jwt }));
    refusedAsClient(await withAssertion(jwt, { client_id: TEST_APP.clientId }));
    const both = await withAssertion(jwt, { client_id: PKJ_APP.clientId, client_secret: "x" });
    assert.equal(both.status, 400);
    assert.equal(both.body.error, "invalid_request");
  });

  function claims(clientId: string): Record<string, unknown> {
    const now = Math.floor(Date.now() / 1000);
    return { iss: clientId, sub: clientId, aud: server.issuer, jti: randomUUID(), iat: now, exp: now + 60 };
  }
});
