import assert from "node:assert/strict";
import { CleanupJob } from "../../src/app/housekeeping.js";
import type { AuditEvent } from "../../src/shared/audit.js";
import { silentLogger } from "../../src/shared/log.js";
import { AuditEventRepository, AuditEventWriter } from "../../src/store/auditEvents.js";
import { openDb, openSqliteWriter } from "../../src/store/db.js";
import { FakeClock } from "../support/clock.js";
import { BACKENDS, describeEachBackend, describeEachDatabase } from "../support/databases.js";
import { RecordingLogger } from "../support/server.js";
import { eventually, scaledMs } from "../support/deadline.js";

const DAY = 24 * 3600 * 1000;
const T0 = Date.UTC(2026, 0, 1);

function event(n: number, over: Partial<AuditEvent> = {}): AuditEvent {
  return {
    event: "token_issued",
    time: T0 + n * 1000,
    outcome: "success",
    actor: { kind: "client", id: `app-${n % 3}`, name: `client-${n % 3}` },
    clientAddress: "192.0.2.7",
    clientId: `client-${n % 3}`,
    userId: null,
    userName: null,
    details: { n },
    ...over,
  };
}

describeEachBackend("audit events", (ctx) => {
  const repo = () => ctx.store.auditEvents;
  const all = async () => repo().list({}, 10_000);

  beforeEach(async () => {
    await ctx.db("audit_events").delete();
  });

  it("stores every event of a large batch, in order, in one INSERT", async () => {
    const batch = Array.from({ length: 1234 }, (_, i) => event(i));
    await repo().insertMany(batch);
    const stored = await all();
    assert.equal(stored.length, 1234);
    assert.deepEqual(stored.map((e) => (e.details as { n: number }).n), batch.map((_, i) => 1233 - i), "newest first");
    const { id: _id, ...first } = stored[stored.length - 1]!;
    assert.deepEqual(first, batch[0]);
  });

  it("pages through newest first, neither repeating nor skipping events of one millisecond", async () => {
    // Three events share each millisecond: the id orders them.
    await repo().insertMany(Array.from({ length: 30 }, (_, i) => event(Math.floor(i / 3), { details: { i } })));
    const seen: number[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await repo().list({ before }, 7);
      if (page.length === 0) break;
      seen.push(...page.map((e) => (e.details as { i: number }).i));
      before = page[page.length - 1]!.id;
    }
    assert.deepEqual(seen, Array.from({ length: 30 }, (_, i) => 29 - i));
  });

  it("filters by user, client, type and time", async () => {
    await repo().insertMany([
      event(1, { event: "sign_in", actor: { kind: "user", id: "u1", name: "alice" }, userId: "u1", userName: "alice", clientId: null }),
      event(2, { event: "user_updated", actor: { kind: "admin", id: "admin", name: "admin" }, userId: "u1", userName: "alice", clientId: null }),
      event(3, { event: "application_updated", actor: { kind: "user", id: "u1", name: "alice" }, clientId: "client-9" }),
      event(4, { event: "sign_in", actor: { kind: "user", id: "u2", name: "bob" }, userId: "u2", userName: "bob", clientId: null }),
      event(5),
    ]);
    const names = async (filter: Parameters<AuditEventRepository["list"]>[0]) => (await repo().list(filter, 100)).map((e) => e.event);
    // The user's events; what alice did as an admin (application_updated) is about the application.
    assert.deepEqual(await names({ userName: "alice" }), ["user_updated", "sign_in"]);
    assert.deepEqual(await names({ clientId: "client-9" }), ["application_updated"]);
    assert.deepEqual(await names({ event: "sign_in" }), ["sign_in", "sign_in"]);
    assert.deepEqual(await names({ since: T0 + 4000 }), ["token_issued", "sign_in"]);
    assert.deepEqual(await names({ event: "sign_in", userName: "bob", since: T0 }), ["sign_in"]);
    assert.deepEqual(await names({ userName: "nobody" }), []);
  });

  it("prunes events past the retention in the cleanup job, and nothing newer", async () => {
    const clock = new FakeClock(T0 + 100 * DAY);
    await repo().insertMany([event(0, { time: T0 }), event(1, { time: T0 + 9 * DAY }), event(2, { time: T0 + 11 * DAY }), event(3, { time: T0 + 99 * DAY })]);
    const limits = { intervalMs: 60_000, batchSize: 1, maxBatches: 10 };
    const deleted = await new CleanupJob(ctx.db, clock, silentLogger, { ...limits, auditRetentionMs: 90 * DAY }).runOnce();
    assert.equal(deleted.audit_events, 2);
    assert.deepEqual((await all()).map((e) => e.time), [T0 + 99 * DAY, T0 + 11 * DAY]);
    // Without a retention (0 or absent) nothing is pruned.
    clock.advanceSeconds(365 * 24 * 3600);
    const none = await new CleanupJob(ctx.db, clock, silentLogger, { ...limits, auditRetentionMs: 0 }).runOnce();
    assert.equal(none.audit_events, undefined);
    assert.equal((await all()).length, 2);
  });

  it("writes a full batch at once, fewer events at the end of their window or by flush()", async () => {
    const writer = new AuditEventWriter(repo(), silentLogger, { flushAfterMs: 60_000, batchSize: 50, maxPending: 1000 });
    for (let i = 0; i < 120; i++) writer.append(event(i));
    // Past a batch, the events written at once and those that arrived meanwhile go without waiting.
    await waitFor(async () => (await all()).length === 120);
    for (let i = 120; i < 130; i++) writer.append(event(i));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await all()).length, 120, "ten events wait for their window of a minute");
    await writer.flush();
    assert.equal((await all()).length, 130);
  });

  it("keeps events the database refused, in order, and writes them once it takes them", async () => {
    let refuse = true;
    const writes: number[] = [];
    const flaky = {
      insertMany: async (events: readonly AuditEvent[]) => {
        if (refuse) throw new Error("database is down");
        writes.push(events.length);
        await repo().insertMany(events);
      },
    };
    const logs = new RecordingLogger();
    const writer = new AuditEventWriter(flaky, logs, { flushAfterMs: 5, batchSize: 1000, maxPending: 8 });
    for (let i = 0; i < 10; i++) writer.append(event(i));
    await assert.rejects(writer.flush(), /8 audit events not written/);
    assert.ok(logs.lines.some((l) => l.message === "audit events not written yet; retrying" && l.fields?.dropped === 2), logs.text());
    refuse = false;
    writer.append(event(10));
    await writer.flush();
    assert.deepEqual((await all()).map((e) => (e.details as { n: number }).n).reverse(), [2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});

const SQLITE_FILE = BACKENDS.filter((b) => b.name === "SQLite file");

describeEachBackend("audit events on a SQLite file", (ctx) => {
  it("are written on a connection of their own, not queued behind a statement on Knex's one connection", async function () {
    // The plain path (IDENTITY_PLAIN_PATHS) writes them on Knex's connection: this is the fast path's promise.
    if (ctx.store.auditEvents.writePath !== "own connection") this.skip();
    await ctx.db("audit_events").delete();
    let readDone = false;
    // Holds Knex's only connection for a while (a count to 3,000,000).
    const read = ctx.db.raw("with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000) select count(*) as n from c").then(() => {
      readDone = true;
    });
    await ctx.store.auditEvents.insertMany([event(1), event(2)]);
    assert.equal(readDone, false, "the batch waited for the read on Knex's connection");
    await read;
    assert.equal((await ctx.store.auditEvents.list({}, 10)).length, 2);
  });
}, SQLITE_FILE);

describeEachDatabase("audit events on a SQLite file, while another connection holds the write lock", (ctx) => {
  it("fails the batch within the deadline, and writes it once when tried again", async () => {
    // A short deadline, longer on a loaded machine, where the batch tried again must not meet it while waiting its turn.
    const db = await openDb({ url: ctx.url, queryTimeoutMs: scaledMs(200) });
    const repo = new AuditEventRepository(db);
    const holder = await openSqliteWriter(ctx.url, 0);
    const run = (sql: string) => new Promise<void>((resolve, reject) => holder.run(sql, (err: Error | null) => (err ? reject(err) : resolve())));
    try {
      await run("begin immediate");
      const started = Date.now();
      await assert.rejects(repo.insertMany([event(1), event(2)]), /SQLITE_BUSY/);
      // Well within ten deadlines.
      assert.ok(Date.now() - started < scaledMs(2000), `refused after ${Date.now() - started} ms`);
      await run("commit");
      // The writer tries a refused batch again (AuditEventWriter): its rows, staged the first time, are not written twice.
      await repo.insertMany([event(1), event(2)]);
      assert.deepEqual((await repo.list({}, 10)).map((e) => (e.details as { n: number }).n), [2, 1]);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
      await repo.close();
      await db.destroy();
    }
  });
}, SQLITE_FILE);

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  await eventually("the condition", condition, 2000, 10);
}
