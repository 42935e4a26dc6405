import assert from "node:assert/strict";
import { SignJWT } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { describeEachDatabase } from "../support/databases.js";
import { dpopKey, dpopProof, type DPoPKey, type ProofClaims } from "../support/dpop.js";
import { call, TOKEN_PATH, type HttpResult } from "../support/oauth.js";
import { basicAuth, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const PARALLEL = 20;

/**
 * Attacks on DPoP (RFC 9449 §11): a stolen proof replayed, one after the
 * other or all at once; a proof made for another URL or method, or for
 * another token; a bound token presented as Bearer; a stale proof, a proof
 * whose header carries a private key, or one signed with a MAC. Each is
 * refused at the token endpoint and at userinfo alike.
 */
describeEachDatabase("DPoP attacks", (db) => {
  let server: RunningServer;
  let key: DPoPKey;
  let tokenUrl: string;
  let userinfoUrl: string;

  before(async () => {
    server = await startTestServer({ database: db.url });
    key = await dpopKey();
    tokenUrl = `${server.issuer}${TOKEN_PATH}`;
    userinfoUrl = `${server.issuer}/api/userinfo`;
  });
  after(() => server?.close());

  /** A client_credentials request with `proof` as its DPoP header. */
  function tokenRequest(proof: string | undefined): Promise<HttpResult> {
    return call(`${server.url}${TOKEN_PATH}`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret),
        ...(proof ? { dpop: proof } : {}),
      },
      body: new URLSearchParams({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" }).toString(),
    });
  }

  /** A DPoP-bound access token of alice's. */
  async function boundToken(): Promise<string> {
    const res = await tokenRequest(await dpopProof(key, { htm: "POST", htu: tokenUrl }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.token_type, "DPoP");
    return res.body.access_token;
  }

  function userinfo(token: string, proof: string | undefined, scheme = "DPoP"): Promise<HttpResult> {
    return call(`${server.url}/api/userinfo`, { headers: { authorization: `${scheme} ${token}`, ...(proof ? { dpop: proof } : {}) } });
  }

  /** A 401 with a DPoP challenge naming `error` (RFC 9449 §7.1). */
  function assertChallenged(res: HttpResult, error: string): void {
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.error, error);
    assert.match(res.headers.get("www-authenticate") ?? "", new RegExp(`^DPoP .*error="${error}".*algs="`));
  }

  it("refuses a token request's proof replayed", async () => {
    const proof = await dpopProof(key, { htm: "POST", htu: tokenUrl });
    assert.equal((await tokenRequest(proof)).status, 200);
    const replayed = await tokenRequest(proof);
    assert.equal(replayed.status, 400);
    assert.equal(replayed.body.error, "invalid_dpop_proof");
    assert.match(replayed.body.error_description, /used before/);
  });

  it(`lets exactly one of ${PARALLEL} parallel presentations of one proof through, at the token endpoint and at userinfo`, async () => {
    const tokenProof = await dpopProof(key, { htm: "POST", htu: tokenUrl });
    const issued = await Promise.all(Array.from({ length: PARALLEL }, () => tokenRequest(tokenProof)));
    assert.equal(issued.filter((r) => r.status === 200).length, 1);
    assert.ok(issued.every((r) => r.status === 200 || r.body.error === "invalid_dpop_proof"));

    const token = await boundToken();
    const proof = await dpopProof(key, { htm: "GET", htu: userinfoUrl, accessToken: token });
    const answers = await Promise.all(Array.from({ length: PARALLEL }, () => userinfo(token, proof)));
    assert.equal(answers.filter((r) => r.status === 200).length, 1);
    for (const refused of answers.filter((r) => r.status !== 200)) assertChallenged(refused, "invalid_dpop_proof");
  });

  it("refuses a userinfo proof replayed", async () => {
    const token = await boundToken();
    const proof = await dpopProof(key, { htm: "GET", htu: userinfoUrl, accessToken: token });
    assert.equal((await userinfo(token, proof)).status, 200);
    assertChallenged(await userinfo(token, proof), "invalid_dpop_proof");
  });

  it("refuses a proof made for another URL, or another method", async () => {
    const token = await boundToken();
    const wrong: ProofClaims[] = [
      { htm: "GET", htu: `${server.issuer}/api/get-account`, accessToken: token },
      { htm: "GET", htu: `http://attacker.example/api/userinfo`, accessToken: token },
      { htm: "POST", htu: userinfoUrl, accessToken: token },
    ];
    for (const claims of wrong) {
      const res = await userinfo(token, await dpopProof(key, claims));
      assertChallenged(res, "invalid_dpop_proof");
      assert.match(res.body.error_description, /htu|htm/);
    }
    const atToken = await tokenRequest(await dpopProof(key, { htm: "GET", htu: tokenUrl }));
    assert.equal(atToken.body.error, "invalid_dpop_proof");
  });

  it("accepts a proof whose htu carries a query or fragment, which the comparison leaves out (§4.3)", async () => {
    const token = await boundToken();
    assert.equal((await userinfo(token, await dpopProof(key, { htm: "GET", htu: `${userinfoUrl}?a=1#f`, accessToken: token }))).status, 200);
  });

  it("refuses a proof whose ath is another token's hash, or missing", async () => {
    const token = await boundToken();
    const other = await boundToken();
    assertChallenged(await userinfo(token, await dpopProof(key, { htm: "GET", htu: userinfoUrl, accessToken: other })), "invalid_dpop_proof");
    assertChallenged(await userinfo(token, await dpopProof(key, { htm: "GET", htu: userinfoUrl })), "invalid_dpop_proof");
  });

  it("refuses a bound token presented as Bearer, or as DPoP without a proof, and a proof of another key", async () => {
    const token = await boundToken();
    assertChallenged(await userinfo(token, undefined, "Bearer"), "invalid_token");
    const asQuery = await call(`${server.url}/api/userinfo?access_token=${token}`);
    assertChallenged(asQuery, "invalid_token");
    assertChallenged(await userinfo(token, undefined), "invalid_dpop_proof");
    const thief = await dpopKey();
    assertChallenged(await userinfo(token, await dpopProof(thief, { htm: "GET", htu: userinfoUrl, accessToken: token })), "invalid_dpop_proof");
  });

  it("refuses a Bearer token presented with the DPoP scheme", async () => {
    const bearer = await tokenRequest(undefined);
    assert.equal(bearer.body.token_type, "Bearer");
    const token = bearer.body.access_token;
    assertChallenged(await userinfo(token, await dpopProof(key, { htm: "GET", htu: userinfoUrl, accessToken: token })), "invalid_token");
  });

  it("refuses a stale proof, and one from the future", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const iat of [now - 120, now + 120]) {
      const res = await tokenRequest(await dpopProof(key, { htm: "POST", htu: tokenUrl, iat }));
      assert.equal(res.body.error, "invalid_dpop_proof");
      assert.match(res.body.error_description, /iat/);
    }
  });

  it("refuses a proof with a private key in its header, a MAC, alg none, or another typ", async () => {
    const withPrivate = await dpopProof(key, { htm: "POST", htu: tokenUrl }, { jwk: { ...key.publicJwk, d: "AAAA" } });
    const noneHeader = Buffer.from(JSON.stringify({ typ: "dpop+jwt", alg: "none", jwk: key.publicJwk })).toString("base64url");
    const nonePayload = Buffer.from(JSON.stringify({ jti: "x", htm: "POST", htu: tokenUrl, iat: Math.floor(Date.now() / 1000) })).toString("base64url");
    const wrongTyp = await dpopProof(key, { htm: "POST", htu: tokenUrl }, { typ: "JWT" });
    const mac = await new SignJWT({ jti: "mac", htm: "POST", htu: tokenUrl, iat: Math.floor(Date.now() / 1000) })
      .setProtectedHeader({ typ: "dpop+jwt", alg: "HS256", jwk: key.publicJwk } as never)
      .sign(new TextEncoder().encode("a shared secret is no proof of possession"));
    for (const proof of [withPrivate, `${noneHeader}.${nonePayload}.`, `${noneHeader}.${nonePayload}.c2ln`, mac, wrongTyp, "a.b", "a.b.c, d.e.f"]) {
      const res = await tokenRequest(proof);
      assert.equal(res.status, 400, proof);
      assert.equal(res.body.error, "invalid_dpop_proof", proof);
    }
  });
});
