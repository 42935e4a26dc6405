import assert from "node:assert/strict";
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sqlite3 from "sqlite3";
import { backupSqlite } from "../../src/store/backup.js";
import { passwordTokens } from "../support/oauth.js";
import { RecordingLogger, startTestServer } from "../support/server.js";

/**
 * Issue 41, §5: the database holds the private signing keys (and, without
 * `--secret-key`, provider secrets). Its folder is the owner's alone (0700),
 * and every file of it, `-wal` and `-shm` included, and every backup, is
 * readable by its owner only (0600), whatever the umask. An existing file or
 * folder that others may read is reported at start.
 */
describe("database file modes", () => {
  const mode = (path: string) => statSync(path).mode & 0o777;
  const octal = (m: number) => `0${m.toString(8)}`;
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "identity-modes-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Run `fn` under `mask`, then put the process's umask back. */
  async function underUmask<T>(mask: number, fn: () => Promise<T>): Promise<T> {
    const before = process.umask(mask);
    try {
      return await fn();
    } finally {
      process.umask(before);
    }
  }

  for (const mask of [0o022, 0o000]) {
    it(`creates the data folder 0700 and the database, -wal and -shm 0600, under umask ${octal(mask).padStart(4, "0")}`, async () => {
      const folder = join(dir, "data", "identity");
      const file = join(folder, "identity.sqlite");
      await underUmask(mask, async () => {
        const server = await startTestServer({ database: file });
        try {
          await passwordTokens(server); // a write, so the WAL holds something
          const files = [file, `${file}-wal`, `${file}-shm`];
          for (const path of files) assert.ok(existsSync(path), path);
          assert.deepEqual(
            [folder, join(dir, "data"), ...files].map((p) => [p, octal(mode(p))]),
            [[folder, "0700"], [join(dir, "data"), "0700"], ...files.map((p) => [p, "0600"])],
          );
        } finally {
          await server.close();
        }
      });
    });
  }

  it("creates a backup 0600 before its first byte is written, under umask 0000", async () => {
    const source = join(dir, "source.sqlite");
    // A source of a few MiB, so the copy is written in many steps while it is watched.
    const db = new sqlite3.Database(source);
    await new Promise<void>((resolve, reject) =>
      db.exec(
        "create table t (b blob); with recursive n(i) as (select 1 union all select i + 1 from n where i < 4000) insert into t select randomblob(1024) from n;",
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    await new Promise<void>((resolve) => db.close(() => resolve()));
    const out = join(dir, "backups");
    mkdirSync(out);
    // Every time the folder changes, the mode of each file in it, as the change is seen.
    const seen = new Set<string>();
    const watcher = watch(out, (_event, name) => {
      if (!name) return;
      try {
        seen.add(`${name} ${octal(mode(join(out, name)))}`);
      } catch {
        // gone already (the partial copy, once linked)
      }
    });
    try {
      await underUmask(0o000, () => backupSqlite(source, join(out, "copy.sqlite")));
    } finally {
      watcher.close();
    }
    assert.equal(octal(mode(join(out, "copy.sqlite"))), "0600");
    assert.ok(seen.size > 0, "the watch saw the copy being written");
    assert.deepEqual([...seen].filter((s) => !s.endsWith(" 0600")), [], "a copy was readable by others while written");
  });

  it("warns at start of a database file or folder others may read, naming each and its mode, and of nothing when private", async () => {
    const folder = join(dir, "shared");
    const file = join(folder, "identity.sqlite");
    mkdirSync(folder);
    chmodSync(folder, 0o755);
    closeSync(openSync(file, "w"));
    chmodSync(file, 0o644);
    const logger = new RecordingLogger();
    const server = await startTestServer({ database: file, logger });
    await server.close();
    const warned = logger.lines.filter((l) => l.level === "warn" && /database files? .*others/.test(l.message));
    assert.equal(warned.length, 1, logger.text());
    const listed = JSON.stringify(warned[0]!.fields);
    for (const named of [`${folder} (0755)`, `${file} (0644)`]) assert.ok(listed.includes(JSON.stringify(named).slice(1, -1)), `${named} in ${listed}`);
    assert.equal(mode(file), 0o644, "the operator's file is reported, not changed");

    const quiet = new RecordingLogger();
    const fresh = await startTestServer({ database: join(dir, "private", "identity.sqlite"), logger: quiet });
    await fresh.close();
    assert.equal(quiet.lines.filter((l) => l.level === "warn" && /others/.test(l.message)).length, 0, quiet.text());
  });
});
