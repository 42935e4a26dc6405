import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import type { DPoPNonceMode } from "../../src/oauth/dpop.js";
import { dpopKey, dpopProof, type DPoPKey } from "../support/dpop.js";
import { call, TOKEN_PATH, type HttpResult } from "../support/oauth.js";
import { basicAuth, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const APP = { ...TEST_APP, refreshExpireInHours: 24 };

/** The nonces of the DPoP headers a client sent, in order (undefined for a proof without one). */
type SentNonces = (string | undefined)[];

/**
 * DPoP server nonces (RFC 9449 §8) under `--dpop-nonce offer` and
 * `required`, with openid-client unchanged: its DPoP handle learns the nonce
 * from the DPoP-Nonce header and retries a use_dpop_nonce answer once, at
 * the token endpoint (400) and at userinfo (401 with a DPoP challenge).
 */
for (const mode of ["required", "offer"] as const satisfies readonly DPoPNonceMode[]) {
  describe(`DPoP nonces: --dpop-nonce ${mode}`, () => {
    let server: RunningServer;
    let key: DPoPKey;
    let config: oidc.Configuration;
    const sent: SentNonces = [];

    before(async () => {
      server = await startTestServer({ config: { applications: [APP], users: [TEST_USER] }, overrides: { dpopNonce: mode } });
      key = await dpopKey();
      config = await oidc.discovery(new URL(server.issuer), APP.clientId, APP.clientSecret, undefined, { execute: [oidc.allowInsecureRequests] });
      // Records what the client sends; the requests themselves go out unchanged.
      config[oidc.customFetch] = (url, options) => {
        const proof = new Headers(options.headers).get("dpop");
        if (proof) sent.push(decodeJwt(proof).nonce as string | undefined);
        return fetch(url, options as RequestInit);
      };
    });
    after(() => server?.close());

    it("lets openid-client through the token request, the refresh and userinfo, its proofs carrying the server's nonce", async () => {
      sent.length = 0;
      const dpop = oidc.getDPoPHandle(config, key.keyPair);
      const tokens = await oidc.genericGrantRequest(config, "password", { username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" }, { DPoP: dpop });
      assert.equal(tokens.token_type, "dpop");
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
      assert.deepEqual(decodeJwt(refreshed.access_token).cnf, { jkt: key.jkt });
      const claims = await oidc.fetchUserInfo(config, refreshed.access_token, tokens.claims()!.sub, { DPoP: dpop });
      assert.equal(claims.preferred_username, TEST_USER.name);
      if (mode === "required") {
        // The first proof had no nonce to carry and was answered use_dpop_nonce; every later one carried it.
        assert.equal(sent[0], undefined);
        assert.equal(sent.length, 4);
      } else {
        // Offered with the first answer, and used from then on.
        assert.equal(sent.length, 3);
      }
      assert.ok(sent.slice(1).every((nonce) => typeof nonce === "string" && nonce.length > 0), JSON.stringify(sent));
    });

    /** A password grant with `proof` as its DPoP header. */
    const tokenRequest = (proof: string) =>
      call(`${server.url}${TOKEN_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(APP.clientId, APP.clientSecret), dpop: proof },
        body: new URLSearchParams({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }).toString(),
      });

    async function freshNonce(): Promise<string> {
      const res = await tokenRequest(await dpopProof(key, { htm: "POST", htu: `${server.issuer}${TOKEN_PATH}` }));
      const nonce = res.headers.get("dpop-nonce");
      assert.ok(nonce, `a DPoP-Nonce header in ${res.status}`);
      return nonce;
    }

    function assertAskedForNonce(res: HttpResult, status: number): void {
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.equal(res.body.error, "use_dpop_nonce");
      assert.ok(res.headers.get("dpop-nonce"));
      if (status === 401) assert.match(res.headers.get("www-authenticate") ?? "", /^DPoP .*error="use_dpop_nonce"/);
    }

    it(mode === "required" ? "asks a proof without a nonce for one (400 at the token endpoint)" : "takes a proof without a nonce, and offers one", async () => {
      const res = await tokenRequest(await dpopProof(key, { htm: "POST", htu: `${server.issuer}${TOKEN_PATH}` }));
      if (mode === "required") assertAskedForNonce(res, 400);
      else assert.equal(res.status, 200);
      assert.ok(res.headers.get("dpop-nonce"));
    });

    it("asks again for a nonce that is not one of ours, and for a stale proof", async () => {
      const htu = `${server.issuer}${TOKEN_PATH}`;
      const nonce = await freshNonce();
      const forged = nonce.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
      assertAskedForNonce(await tokenRequest(await dpopProof(key, { htm: "POST", htu, nonce: forged })), 400);
      const stale = await dpopProof(key, { htm: "POST", htu, nonce, iat: Math.floor(Date.now() / 1000) - 300 });
      assertAskedForNonce(await tokenRequest(stale), 400);
      assert.equal((await tokenRequest(await dpopProof(key, { htm: "POST", htu, nonce }))).status, 200);
    });

    it("asks at userinfo with a 401 DPoP challenge", async () => {
      const nonce = await freshNonce();
      const issued = await tokenRequest(await dpopProof(key, { htm: "POST", htu: `${server.issuer}${TOKEN_PATH}`, nonce }));
      const token = issued.body.access_token;
      const htu = `${server.issuer}/api/userinfo`;
      const without = await call(`${server.url}/api/userinfo`, { headers: { authorization: `DPoP ${token}`, dpop: await dpopProof(key, { htm: "GET", htu, accessToken: token, nonce: "0.AAAAAAAAAAAAAAAAAAAAAA" }) } });
      assertAskedForNonce(without, 401);
      const answered = await call(`${server.url}/api/userinfo`, { headers: { authorization: `DPoP ${token}`, dpop: await dpopProof(key, { htm: "GET", htu, accessToken: token, nonce }) } });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.ok(answered.headers.get("dpop-nonce"), "a nonce offered with the answer");
    });
  });
}
