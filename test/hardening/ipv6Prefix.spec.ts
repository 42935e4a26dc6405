import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { WarningLog } from "../support/fuzz/run.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const LOCKED = "too many failed sign-in attempts; try again later";
const CLIENT_LOCKED = "too many failed client authentications; try again later";
const PER_ADDRESS = 3;
const LOCKOUT_SECONDS = 300;
const CHOSEN_SECRET = "a-secret-somebody-chose";

/**
 * Issue 41 §7, the attack: one host on IPv6 holds a whole /64 and can send
 * every guess from an address of its own. Counted by full address, each
 * address brought a fresh per-address budget; counted by the /64, the
 * network shares one, on every per-address limit.
 */
describe("per-address budgets of IPv6 clients, behind a trusted proxy", () => {
  const clock = new FakeClock();
  let logger: WarningLog;
  let server: RunningServer;
  let chosenId: string;

  before(async () => {
    logger = new WarningLog();
    server = await startTestServer({
      clock,
      logger,
      overrides: {
        trustedProxies: ["127.0.0.1"],
        loginMaxFailures: 100,
        loginMaxFailuresPerIp: PER_ADDRESS,
        loginLockoutSeconds: LOCKOUT_SECONDS,
        clientAuthMaxFailures: 100,
        clientAuthMaxFailuresPerIp: PER_ADDRESS,
      },
    });
    chosenId = (await server.domain.applicationAdmin.create({ name: "chosen", clientSecret: CHOSEN_SECRET, grantTypes: ["client_credentials"] })).app.clientId;
  });
  after(() => server.close());

  const passwordGrant = (username: string, password: string, from: string) =>
    postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "password", username, password },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), "x-forwarded-for": from },
    );
  const clientCredentials = (secret: string, from: string) =>
    postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: "client_credentials" }, { authorization: basicAuth(chosenId, secret), "x-forwarded-for": from });

  it("locks sign-in for the whole /64 after failures spread over its addresses, and no other /64", async () => {
    const spread = ["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:DB8:1:2:0:0:0:3"];
    for (const [i, from] of spread.entries()) assert.equal((await passwordGrant(`nobody-${i}`, `guess-${i}`, from)).body.error, "invalid_grant");
    const refused = await passwordGrant(TEST_USER.name, TEST_USER.password, "2001:db8:1:2:abcd::9");
    assert.deepEqual(refused.body, { error: "invalid_grant", error_description: LOCKED });
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "2001:db8:1:3::1")).status, 200, "the next /64 is another client");

    const lock = logger.lines.find((l) => l.message === "sign-in locked after repeated failures");
    assert.equal(lock?.fields?.kind, "address");
    assert.equal(lock?.fields?.subject, "2001:db8:1:2::/64");
  });

  it("locks client authentication for the whole /64 after failures spread over its addresses, and no other /64", async () => {
    for (let i = 0; i < PER_ADDRESS; i++) {
      const res = await clientCredentials(`wrong-secret-${i}-0123456789`, `2001:db8:7:7::${i + 1}`);
      assert.equal(res.body.error, "invalid_client");
    }
    const refused = await clientCredentials(CHOSEN_SECRET, "2001:db8:7:7:1:2:3:4");
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error_description, CLIENT_LOCKED);
    assert.equal((await clientCredentials(CHOSEN_SECRET, "2001:db8:7:8::1")).status, 200, "the next /64 is another client");
  });

  it("counts an IPv4 client by its own address, however it is written", async () => {
    for (let i = 0; i < PER_ADDRESS; i++) await passwordGrant(`nobody-${i}`, `guess-${i}`, i % 2 ? "::ffff:198.51.100.4" : "198.51.100.4");
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "198.51.100.4")).body.error_description, LOCKED);
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "198.51.100.5")).status, 200, "its neighbour is another client");
  });
});
