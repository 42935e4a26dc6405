import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { resolveServeOption } from "./config.js";
import { backupSqlite } from "./../store/backup.js";
import { connectDb, isPostgresUrl, migrate, migrationStatus, type MigrationStatus } from "./../store/db.js";
import { onDatabase, quietDriver } from "./database.js";

/** The database a maintenance command works on: --database, else DATABASE_URL, else serve's default. */
function databaseOf(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  return resolveServeOption("database", flag, env);
}

/**
 * `identity backup FILE [--database PATH]`: a consistent copy of the SQLite
 * database, safe while `identity serve` runs on it. Refuses to overwrite
 * FILE, and refuses PostgreSQL (pg_dump is its tool).
 */
export async function runBackupCommand(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { values, positionals } = parseArgs({ args, options: { database: { type: "string" } }, strict: true, allowPositionals: true });
  if (positionals.length !== 1) throw new Error("usage: identity backup FILE [--database PATH]");
  const target = positionals[0]!;
  const database = databaseOf(values.database, env);
  if (isPostgresUrl(database)) {
    throw new Error("backup copies a SQLite file only; back up PostgreSQL with pg_dump (docs/operations.md, Backups)");
  }
  if (database === ":memory:" || database.startsWith("file:")) throw new Error(`backup needs a SQLite file path, not ${database}`);
  const { bytes } = await onDatabase(database, "back up", () => backupSqlite(database, target));
  return `backed up ${database} to ${target} (${bytes} bytes)\n`;
}

/**
 * `identity migrate [--status] [--database URL]`: apply the pending
 * migrations, or with --status only list them (applied, pending, and those
 * applied by a newer build, on which `serve` refuses to start).
 */
export async function runMigrateCommand(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { values } = parseArgs({ args, options: { database: { type: "string" }, status: { type: "boolean" } }, strict: true, allowPositionals: false });
  const database = databaseOf(values.database, env);
  if (values.status && !isPostgresUrl(database) && database !== ":memory:" && !existsSync(database)) throw new Error(`no SQLite database at ${database}`);
  const db = connectDb({ url: database, log: quietDriver });
  try {
    let report = "";
    if (!values.status) {
      const ran = await onDatabase(database, "migrate", () => migrate(db));
      report = ran.length ? ran.map((name) => `ran ${name}\n`).join("") : "nothing to migrate\n";
    }
    return report + formatStatus(await onDatabase(database, "read", () => migrationStatus(db)));
  } finally {
    await db.destroy();
  }
}

function formatStatus(status: MigrationStatus): string {
  const unknown = new Set(status.unknown);
  const rows = [
    ...status.applied.map((name) => [name, unknown.has(name) ? "applied, unknown to this build" : "applied"]),
    ...status.pending.map((name) => [name, "pending"]),
  ];
  const width = Math.max(0, ...rows.map(([name]) => name!.length));
  const lines = rows.map(([name, state]) => `${name!.padEnd(width)}  ${state}`);
  let summary = `${status.applied.length} applied, ${status.pending.length} pending`;
  if (unknown.size) summary += `; ${unknown.size} unknown to this build: a newer version migrated this database, and this one will not start on it`;
  return [...lines, summary].join("\n") + "\n";
}
