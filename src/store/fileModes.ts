import { chmodSync, closeSync, existsSync, fchmodSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * A SQLite database holds the private signing keys (and, without a secret
 * key, provider secrets), so its folder and files are its owner's alone.
 * SQLite creates a new database file 0644 less the umask, but gives each
 * file it adds beside it (`-wal`, `-shm`, a journal) the database file's own
 * mode, umask aside. So creating the folder 0700 and the file 0600 before
 * SQLite first opens it keeps all of them private, whatever the umask.
 */
const FOLDER_MODE = 0o700;
const FILE_MODE = 0o600;

/** The files SQLite keeps for a database: its own and those beside it. */
const sqliteFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`, `${file}-journal`];

/**
 * Before SQLite opens `file`: make its folder (and any missing parents)
 * 0700 and the file 0600, empty (an empty file is an empty database), when
 * they do not exist yet. What exists is left as it is.
 */
export function prepareSqliteFile(file: string): void {
  const folder = resolve(dirname(file));
  const made = mkdirSync(folder, { recursive: true, mode: FOLDER_MODE });
  if (made !== undefined) {
    // The umask may have narrowed the mode; every folder made here gets it exactly.
    const first = resolve(made);
    for (let dir = folder; dir.startsWith(first); dir = dirname(dir)) {
      chmodSync(dir, FOLDER_MODE);
      if (dir === first) break;
    }
  }
  createPrivateFile(file);
}

/**
 * Creates `path` empty and 0600, exactly, unless it exists (then it is left
 * alone). Returns whether it made it.
 */
export function createPrivateFile(path: string): boolean {
  let fd: number;
  try {
    // Exclusive: never opens a file someone else made, or a symlink.
    fd = openSync(path, "wx", FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    fchmodSync(fd, FILE_MODE);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * The database's folder and files that others than the owner may use, as
 * `path (mode)`: what `serve` warns of at start. Made before this rule, or
 * by hand; they are reported, not changed (their modes are the operator's call).
 */
export function sqliteFilesOthersMayRead(file: string): string[] {
  const exposed: string[] = [];
  for (const path of [dirname(file), ...sqliteFiles(file)]) {
    if (!existsSync(path)) continue;
    const mode = statSync(path).mode & 0o777;
    if ((mode & 0o077) !== 0) exposed.push(`${path} (0${mode.toString(8)})`);
  }
  return exposed;
}
