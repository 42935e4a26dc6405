import assert from "node:assert/strict";
import { CleanupJob } from "./../../src/app/housekeeping.js";
import { silentLogger, type Logger } from "./../../src/shared/log.js";
import type { Db } from "./../../src/store/db.js";
import { createStore } from "./../../src/store/index.js";
import { FakeClock } from "./../support/clock.js";
import { SWEEPS } from "./../../src/store/cleanup.js";
import { openTestDb } from "./../support/databases.js";

/** What a cleanup run reports when it deleted nothing, table by table. */
const NOTHING_SWEPT = Object.fromEntries(SWEEPS.map((sweep) => [sweep.table, 0]));

describe("cleanup job schedule", () => {
  let db: Db;
  let close: () => Promise<void>;
  beforeEach(async () => ({ db, close } = await openTestDb()));
  afterEach(() => close());

  it("runs in the background until stopped, and logs what it deleted", async () => {
    const clock = new FakeClock();
    await createStore(db).sessions.insert({ idHash: "h", sid: "s", userId: "u", authTime: 0, createdAt: 0, expiresAt: clock.now() });
    let logged: (fields: Record<string, unknown> | undefined) => void;
    const deleted = new Promise<Record<string, unknown> | undefined>((resolve) => (logged = resolve));
    const logger: Logger = { ...silentLogger, info: (_message, fields) => logged(fields) };
    const job = new CleanupJob(db, clock, logger, { intervalMs: 1, batchSize: 10, maxBatches: 1 });
    job.start();
    try {
      assert.deepEqual(await deleted, { ...NOTHING_SWEPT, sessions: 1 });
    } finally {
      await job.stop();
    }
  });

  it("logs a failed run and keeps going", async () => {
    const errors: string[] = [];
    let failedTwice: () => void;
    const twice = new Promise<void>((resolve) => (failedTwice = resolve));
    const logger: Logger = {
      ...silentLogger,
      error: (message) => {
        errors.push(message);
        if (errors.length === 2) failedTwice();
      },
    };
    await db.schema.dropTable("sessions");
    const job = new CleanupJob(db, new FakeClock(), logger, { intervalMs: 1, batchSize: 10, maxBatches: 1 });
    job.start();
    await twice;
    await job.stop();
    assert.match(errors[0]!, /cleanup failed/);
  });
});
