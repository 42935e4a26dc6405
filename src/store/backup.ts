import { closeSync, existsSync, fsyncSync, linkSync, openSync, statSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import sqlite3 from "sqlite3";
import { openSqliteConnection } from "./db.js";
import { createPrivateFile } from "./fileModes.js";

export interface BackupResult {
  /** Size of the copy, in bytes. */
  bytes: number;
}

/**
 * Copy the SQLite database `source` to a new file `target` while the service
 * may be writing to it: `VACUUM INTO` reads one snapshot (a read transaction,
 * which WAL lets run beside the writer), so the copy holds every transaction
 * committed before it began and none after. The copy is written under a
 * temporary name beside `target`, created readable by its owner only
 * before its first byte (it holds the private signing keys), checked
 * (`PRAGMA quick_check`), synced, and then linked to `target`, which fails
 * rather than replace an existing file.
 */
export async function backupSqlite(source: string, target: string): Promise<BackupResult> {
  if (!existsSync(source)) throw new Error(`no SQLite database at ${source}`);
  if (existsSync(target)) throw new Error(`${target} already exists: refusing to overwrite it; name a new file`);
  const partial = join(dirname(target), `.${basename(target)}.${process.pid}.partial`);
  if (existsSync(partial)) unlinkSync(partial);
  try {
    // 0600 before SQLite writes a byte into it: VACUUM INTO fills an empty file it is given.
    createPrivateFile(partial);
    const connection = await openSqliteConnection(source, sqlite3.OPEN_READWRITE, 10_000);
    try {
      await run(connection, "VACUUM INTO ?", [partial]);
    } finally {
      await new Promise<void>((resolve) => connection.close(() => resolve()));
    }
    await check(partial);
    syncFile(partial);
    try {
      linkSync(partial, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new Error(`${target} already exists: refusing to overwrite it; name a new file`);
      throw err;
    }
    syncFile(dirname(target));
    return { bytes: statSync(target).size };
  } finally {
    if (existsSync(partial)) unlinkSync(partial);
  }
}

async function check(file: string): Promise<void> {
  const connection = await openSqliteConnection(file, sqlite3.OPEN_READONLY);
  try {
    const rows = await all(connection, "PRAGMA quick_check");
    const verdict = rows.map((row) => Object.values(row)[0]).join("; ");
    if (verdict !== "ok") throw new Error(`the copy failed SQLite's quick_check: ${verdict}`);
  } finally {
    await new Promise<void>((resolve) => connection.close(() => resolve()));
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function run(connection: sqlite3.Database, sql: string, params: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => connection.run(sql, params, (err) => (err ? reject(err) : resolve())));
}

function all(connection: sqlite3.Database, sql: string): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => connection.all(sql, (err, rows) => (err ? reject(err) : resolve(rows as Record<string, unknown>[]))));
}
