import assert from "node:assert/strict";
import { CLEANUP_DEFAULTS } from "../../src/app/housekeeping.js";
import type { RunningServer } from "../../src/app/server.js";
import { deleteExpired } from "../../src/store/cleanup.js";
import { FakeClock } from "../support/clock.js";
import { isActive, passwordTokens, refresh } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const HOUR = 3600;
const APP = { ...TEST_APP, expireInHours: 1, refreshExpireInHours: 24 };
// Its access tokens outlive its refresh tokens.
const LONG_ACCESS_APP = { ...TEST_APP, name: "long-access", clientId: "client-3", clientSecret: "secret-3-of-client-3", expireInHours: 48, refreshExpireInHours: 24 };

describe("cleanup keeps what refresh reuse detection needs", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({ clock, config: { applications: [APP, LONG_ACCESS_APP], users: [TEST_USER] } });
  });
  after(() => server.close());

  /** One full run of the cleanup job, as every instance does it on its schedule. */
  const cleanup = () => deleteExpired(server.store.db, clock.now(), CLEANUP_DEFAULTS);

  it("detects reuse of a consumed refresh token past its own expiry, while its family lives on", async () => {
    const first = await passwordTokens(server, { client: APP });
    clock.advanceSeconds(23 * HOUR);
    const second = (await refresh(server, first.refresh_token!, {}, APP)).body;
    clock.advanceSeconds(2 * HOUR); // the first refresh token and both access tokens have expired

    assert.ok((await cleanup()).access_tokens! >= 2);
    const reuse = await refresh(server, first.refresh_token!, {}, APP);
    assert.equal(reuse.body.error, "invalid_grant");
    assert.match(reuse.body.error_description, /already used/);
    const refused = await refresh(server, second.refresh_token, {}, APP);
    assert.match(refused.body.error_description, /revoked/);
  });

  it("detects reuse after every refresh token of the family expired, while an access token lives", async () => {
    const first = await passwordTokens(server, { client: LONG_ACCESS_APP });
    clock.advanceSeconds(HOUR);
    const second = (await refresh(server, first.refresh_token!, {}, LONG_ACCESS_APP)).body;
    clock.advanceSeconds(25 * HOUR); // both refresh tokens have expired, both access tokens live

    await cleanup();
    assert.equal(await isActive(server, second.access_token, LONG_ACCESS_APP), true);
    const reuse = await refresh(server, first.refresh_token!, {}, LONG_ACCESS_APP);
    assert.match(reuse.body.error_description, /already used/);
    assert.equal(await isActive(server, second.access_token, LONG_ACCESS_APP), false);
    assert.equal(await isActive(server, first.access_token, LONG_ACCESS_APP), false);
  });

  it("deletes a family once its last token has expired", async () => {
    const first = await passwordTokens(server, { client: LONG_ACCESS_APP });
    clock.advanceSeconds(48 * HOUR);
    await cleanup();
    const gone = await refresh(server, first.refresh_token!, {}, LONG_ACCESS_APP);
    assert.equal(gone.body.error, "invalid_grant");
    assert.match(gone.body.error_description, /is invalid/);
  });
});
