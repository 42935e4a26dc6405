import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sqlite3 from "sqlite3";
import { openSqliteConnection } from "../../src/store/db.js";
import { SqliteChangeWatch } from "../../src/store/sqliteChanges.js";

describe("SQLite change watch", () => {
  let dir: string;
  let file: string;
  let writer: sqlite3.Database;
  let watch: SqliteChangeWatch;
  const exec = (db: sqlite3.Database, sql: string) => new Promise<void>((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "identity-changes-"));
    file = join(dir, "db.sqlite");
    watch = new SqliteChangeWatch(file);
    assert.equal(watch.current(), undefined, "no -shm file yet: no promise");
    writer = await openSqliteConnection(file, sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE);
    await exec(writer, "PRAGMA journal_mode=WAL; CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);");
  });
  after(async () => {
    watch.close();
    await new Promise((resolve) => writer.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("stays the same across reads and passive checkpoints, from any connection", async () => {
    const before = watch.current();
    assert.notEqual(before, undefined);
    const reader = await openSqliteConnection(file, sqlite3.OPEN_READONLY);
    await exec(reader, "SELECT * FROM t");
    await new Promise((resolve) => reader.close(resolve));
    await exec(writer, "SELECT * FROM t; PRAGMA wal_checkpoint(PASSIVE);");
    assert.equal(watch.current(), before);
  });

  it("moves at every commit", async () => {
    const seen = new Set([watch.current()]);
    for (const sql of ["INSERT INTO t VALUES (2)", "UPDATE t SET a = 3 WHERE a = 2", "DELETE FROM t WHERE a = 3"]) {
      await exec(writer, sql);
      const now = watch.current();
      assert.ok(!seen.has(now), `${sql}: a version not seen before`);
      seen.add(now);
    }
  });
});
