import assert from "node:assert/strict";
import { T0 } from "../../support/storeFixtures.js";
import { anApplication, aSession, aUser } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";
import type { LogoutDelivery } from "../../../src/store/backchannelLogouts.js";
import type { Store } from "../../../src/store/index.js";

const LEASE = 30_000;

/** The queued deliveries about `sid`, as client ids and reasons, without claiming any. */
async function queuedFor(store: Store, sid: string): Promise<{ clientId: string; reason: string }[]> {
  const rows = await store.db("backchannel_logouts").where({ sid }).orderBy("client_id");
  return rows.map((r) => ({ clientId: r.client_id as string, reason: r.reason as string }));
}

describeEachBackend("storage contract: back-channel logouts", (ctx) => {
  /** A user with a session that two clients with a back-channel URI and one without were issued to. */
  async function sessionWithClients() {
    const user = aUser();
    const told = [anApplication(), anApplication()];
    const silent = anApplication({ backchannelLogoutUri: "" });
    await ctx.store.users.insert(user);
    for (const app of [...told, silent]) await ctx.store.applications.insert(app);
    const session = aSession({ userId: user.id, expiresAt: T0 + 3_600_000 });
    await ctx.store.sessions.insert(session);
    for (const app of [...told, silent, told[0]!]) await ctx.store.sessions.addClient(session.sid, app.clientId, session.expiresAt);
    return { user, told, silent, session };
  }

  it("queues one delivery per client of the ended session that has a backchannelLogoutUri, and forgets the session's clients", async () => {
    const { told, silent, session } = await sessionWithClients();
    const other = await sessionWithClients();
    assert.deepEqual(await ctx.store.sessions.clientsOf(session.sid), [...told.map((a) => a.clientId), silent.clientId].sort());
    assert.equal(await ctx.store.sessions.end(session.idHash, "sign_out", T0 + 1), true);
    assert.deepEqual(await queuedFor(ctx.store, session.sid), told.map((a) => ({ clientId: a.clientId, reason: "sign_out" })).sort((a, b) => a.clientId.localeCompare(b.clientId)));
    assert.deepEqual(await ctx.store.sessions.clientsOf(session.sid), []);
    assert.deepEqual(await queuedFor(ctx.store, other.session.sid), [], "another session is untouched");
    assert.equal(await ctx.store.sessions.end(session.idHash, "sign_out", T0 + 2), false);
    assert.equal((await queuedFor(ctx.store, session.sid)).length, 2, "an end of an ended session queues nothing more");
  });

  it("queues in the transactions that end a user's sign-ins: deleting the user, and ending them all", async () => {
    const deleted = await sessionWithClients();
    assert.equal(await ctx.store.users.deleteByName(deleted.user.name, T0 + 1), true);
    assert.deepEqual((await queuedFor(ctx.store, deleted.session.sid)).map((r) => r.reason), ["user_deleted", "user_deleted"]);

    const revoked = await sessionWithClients();
    const second = aSession({ userId: revoked.user.id });
    await ctx.store.sessions.insert(second);
    await ctx.store.sessions.addClient(second.sid, revoked.told[1]!.clientId, second.expiresAt);
    await ctx.store.userSignIns.endAll(revoked.user.id, T0 + 1);
    assert.deepEqual((await queuedFor(ctx.store, revoked.session.sid)).map((r) => r.reason), ["admin_revoked", "admin_revoked"]);
    assert.deepEqual(await queuedFor(ctx.store, second.sid), [{ clientId: revoked.told[1]!.clientId, reason: "admin_revoked" }]);
  });

  it("ends every session of a user but the one kept, and keeps the sid and the clients of a session replaced under a new cookie", async () => {
    const { user, session } = await sessionWithClients();
    const kept = aSession({ userId: user.id });
    await ctx.store.sessions.insert(kept);
    assert.equal(await ctx.store.sessions.endAllOf(user.id, "password_changed", T0 + 1, kept.idHash), 1);
    assert.equal((await queuedFor(ctx.store, session.sid)).length, 2);
    assert.ok(await ctx.store.sessions.findByHash(kept.idHash));

    const again = await sessionWithClients();
    const next = aSession({ userId: again.user.id, sid: again.session.sid });
    await ctx.store.sessions.replace(again.session.idHash, next);
    assert.equal(await ctx.store.sessions.findByHash(again.session.idHash), undefined);
    assert.equal((await ctx.store.sessions.findByHash(next.idHash))?.sid, again.session.sid);
    assert.equal((await ctx.store.sessions.clientsOf(again.session.sid)).length, 3);
    assert.deepEqual(await queuedFor(ctx.store, again.session.sid), []);
  });

  it("hands each due delivery to exactly one of many concurrent claimants, and again once its lease ran out", async () => {
    const { session } = await sessionWithClients();
    await ctx.store.sessions.end(session.idHash, "sign_out", T0);
    const now = T0 + 10;
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => ctx.store.backchannelLogouts.claimDue(now, now + LEASE, `claimant-${i}`, 50)));
    const mine = (d: LogoutDelivery) => d.sid === session.sid;
    const claimed = claims.flat().filter(mine);
    assert.equal(claimed.length, 2, "each of the two deliveries claimed once");
    assert.equal(new Set(claimed.map((d) => d.id)).size, 2);
    assert.deepEqual((await ctx.store.backchannelLogouts.claimDue(now + LEASE - 1, now + 2 * LEASE, "late", 50)).filter(mine), [], "leased");
    const expired = (await ctx.store.backchannelLogouts.claimDue(now + LEASE, now + 2 * LEASE, "heir", 50)).filter(mine);
    assert.equal(expired.length, 2, "a lease that ran out (its claimant died) makes the row due again");
  });

  it("lets only the lease holder finish or reschedule a delivery, counting the attempts", async () => {
    const { session } = await sessionWithClients();
    await ctx.store.sessions.end(session.idHash, "sign_out", T0);
    const now = T0 + 10;
    const [first, second] = (await ctx.store.backchannelLogouts.claimDue(now, now + LEASE, "holder", 50)).filter((d) => d.sid === session.sid);
    await ctx.store.backchannelLogouts.done(first!.id, "someone else");
    await ctx.store.backchannelLogouts.retryAt(second!.id, "someone else", now + 5, "no");
    assert.equal((await queuedFor(ctx.store, session.sid)).length, 2, "another claimant changes nothing");
    await ctx.store.backchannelLogouts.done(first!.id, "holder");
    await ctx.store.backchannelLogouts.retryAt(second!.id, "holder", now + 5_000, "the application's backchannelLogoutUri answered HTTP 500");
    assert.equal((await queuedFor(ctx.store, session.sid)).length, 1);
    assert.deepEqual((await ctx.store.backchannelLogouts.claimDue(now + 4_999, now + LEASE, "x", 50)).filter((d) => d.sid === session.sid), [], "not due yet");
    const [retried] = (await ctx.store.backchannelLogouts.claimDue(now + 5_000, now + LEASE, "x", 50)).filter((d) => d.sid === session.sid);
    assert.equal(retried?.attempts, 1);
    assert.equal(retried?.reason, "sign_out");
  });
});
