import assert from "node:assert/strict";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { dpopKey, dpopProof, type DPoPKey } from "../support/dpop.js";
import { startInstance, type Instance } from "../support/instances.js";
import { call, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

// Behind a load balancer every instance announces the same issuer, and a proof names it, whichever instance serves.
const ISSUER = "http://identity.test";
const TOKEN_URL = `${ISSUER}${TOKEN_PATH}`;
const USERINFO_URL = `${ISSUER}/api/userinfo`;

// Instances share a SQLite file on one machine and a PostgreSQL database across machines.
const SHARED_BACKENDS = BACKENDS.filter((backend) => backend.name !== "SQLite :memory:");

/**
 * DPoP across two real instances on one database, `--dpop-nonce required`:
 * a proof accepted by one is a replay on the other (the jti is recorded in
 * the shared store by one conditional insert), and a nonce one instance made
 * holds on the other (made from the secret they share in the store).
 */
describeEachDatabase("DPoP across instances (real processes)", (ctx) => {
  let a: Instance;
  let b: Instance;
  let key: DPoPKey;

  before(async function () {
    this.timeout(60_000);
    const args = [
      "--database", ctx.url,
      "--config", writeConfigFile({ applications: [TEST_APP], users: [TEST_USER] }),
      "--admin-token", ADMIN_TOKEN,
      "--issuer", ISSUER,
      "--dpop-nonce", "required",
    ];
    if (ctx.backend.name === "PostgreSQL") {
      // Started together: both may try to store the nonce secret first.
      [a, b] = await Promise.all([startInstance(args), startInstance(args)]);
    } else {
      a = await startInstance(args);
      b = await startInstance(args);
    }
    key = await dpopKey();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const tokenRequest = (at: Instance, proof: string) =>
    call(`${at.url}${TOKEN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), dpop: proof },
      body: new URLSearchParams({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }).toString(),
    });

  it("takes on B the nonce A made, and refuses on A a proof B accepted", async () => {
    const asked = await tokenRequest(a, await dpopProof(key, { htm: "POST", htu: TOKEN_URL }));
    assert.equal(asked.body.error, "use_dpop_nonce", a.stderr());
    const nonce = asked.headers.get("dpop-nonce")!;

    const proof = await dpopProof(key, { htm: "POST", htu: TOKEN_URL, nonce });
    const issued = await tokenRequest(b, proof);
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    const replayed = await tokenRequest(a, proof);
    assert.equal(replayed.status, 400);
    assert.equal(replayed.body.error, "invalid_dpop_proof");

    // At userinfo too, with the proof presented to both at once.
    const token = issued.body.access_token;
    const userinfoProof = await dpopProof(key, { htm: "GET", htu: USERINFO_URL, accessToken: token, nonce });
    const answers = await Promise.all([a, b, a, b].map((at) => call(`${at.url}/api/userinfo`, { headers: { authorization: `DPoP ${token}`, dpop: userinfoProof } })));
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 401, 401, 401]);
  });
}, SHARED_BACKENDS);
