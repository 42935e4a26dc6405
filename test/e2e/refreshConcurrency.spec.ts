import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { describeEachDatabase } from "../support/databases.js";
import { isActive, passwordTokens, refresh } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const RACERS = 50;
const GRACE_SECONDS = [0, 10];

/** Fire RACERS refreshes of one token at once; returns the winners' bodies and the losers' answers. */
async function race(server: RunningServer, refreshToken: string) {
  const results = await Promise.all(Array.from({ length: RACERS }, () => refresh(server, refreshToken)));
  const winners = results.filter((r) => r.status === 200).map((r) => r.body);
  const losers = results.filter((r) => r.status !== 200);
  return { winners, losers };
}

describeEachDatabase(`${RACERS} concurrent refreshes of one token`, (ctx) => {
  // One clock for both servers: they share the signing key, which must be active on both.
  const clock = new FakeClock();
  const servers = new Map<number, RunningServer>();
  before(async () => {
    // Both servers use the backend's database (on :memory: each gets its own).
    for (const graceSeconds of GRACE_SECONDS) {
      const server = await startTestServer({
        clock,
        database: ctx.url,
        config: { applications: [{ ...TEST_APP, refreshExpireInHours: 24 }], users: [TEST_USER] },
        overrides: { refreshReuseGraceSeconds: graceSeconds },
      });
      servers.set(graceSeconds, server);
    }
  });
  after(() => Promise.all([...servers.values()].map((s) => s.close())));

  for (const graceSeconds of GRACE_SECONDS) {
    const outcome = graceSeconds === 0 ? "then the family is revoked" : "and the winner's new tokens stay valid";
    it(`grace ${graceSeconds} s: lets exactly one win, answers all others 400 invalid_grant, ${outcome}`, async () => {
      const server = servers.get(graceSeconds)!;
      const original = await passwordTokens(server);
      const { winners, losers } = await race(server, original.refresh_token!);
      assert.equal(winners.length, 1);
      assert.equal(losers.length, RACERS - 1);
      for (const loser of losers) {
        assert.equal(loser.status, 400);
        assert.equal(loser.body.error, "invalid_grant");
      }

      const winner = winners[0];
      if (graceSeconds === 0) {
        // The losers presented a consumed token: reuse, so the family is gone, winner included.
        assert.equal(await isActive(server, winner.access_token), false);
        assert.equal(await isActive(server, original.access_token), false);
        assert.equal((await refresh(server, winner.refresh_token)).body.error, "invalid_grant");
      } else {
        // Inside the grace window the winner's chain lives on.
        assert.equal(await isActive(server, winner.access_token), true);
        const next = await refresh(server, winner.refresh_token);
        assert.equal(next.status, 200, JSON.stringify(next.body));
        // Past the window, presenting the consumed original is reuse again.
        clock.advanceSeconds(graceSeconds);
        assert.equal((await refresh(server, original.refresh_token!)).body.error, "invalid_grant");
        assert.equal(await isActive(server, next.body.access_token), false);
      }
    });
  }
});
