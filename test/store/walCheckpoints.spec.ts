import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { openDb, type Db } from "../../src/store/db.js";
import { startWalCheckpoints, type WalCheckpoints } from "../../src/store/walCheckpoints.js";
import { eventually } from "../support/deadline.js";

describe("WAL checkpoints off the write path", () => {
  let dir: string;
  let db: Db | undefined;
  let checkpoints: WalCheckpoints | undefined;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "wal-"))));
  afterEach(async () => {
    await checkpoints?.stop();
    await db?.destroy();
    checkpoints = db = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const until = (done: () => boolean, what: string) => eventually(what, done, 5000, 20);

  it("copies committed pages into the database file while the writer leaves them in the WAL", async () => {
    const file = join(dir, "db.sqlite");
    db = await openDb({ url: file });
    await db.schema.createTable("filler", (t) => t.text("blob"));
    const before = statSync(file).size;
    // ~1,500 pages: past SQLite's default threshold (1,000), under the writer's (10,000).
    await db.batchInsert("filler", Array.from({ length: 1500 }, () => ({ blob: "x".repeat(3000) })), 100);
    await sleep(300);
    assert.equal(statSync(file).size, before, "the writer checkpointed by itself");

    checkpoints = startWalCheckpoints(file, (err) => assert.fail(String(err)));
    await until(() => statSync(file).size >= before + 1500 * 3000, "the pages to reach the database file");
  });

  it("reports a failure once, not at every attempt", async () => {
    const failures: unknown[] = [];
    checkpoints = startWalCheckpoints(join(dir, "missing", "db.sqlite"), (err) => failures.push(err));
    await until(() => failures.length > 0, "the first failure");
    await sleep(350); // three more attempts
    assert.equal(failures.length, 1);
    assert.match(String(failures[0]), /SQLITE_CANTOPEN/);
  });
});
