import { isPostgresUrl, openDb, type Db, type DbOptions } from "./../store/db.js";

/**
 * The database could not be opened or migrated: the message is one line
 * naming the database (without its password) and the reason, what `identity`
 * prints before exiting non-zero.
 */
export class DatabaseUnavailableError extends Error {
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = "DatabaseUnavailableError";
  }
}

/** The database as a message may show it: the path, or the URL without its password. */
export function databaseLabel(url: string): string {
  if (!isPostgresUrl(url)) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "the PostgreSQL URL given (not a valid URL)";
  }
}

/** The first line of an error's message; an AggregateError (every address refused) by its first error. */
export function errorReason(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0 && !err.message) return errorReason(err.errors[0]);
  const message = err instanceof Error ? err.message || (err as NodeJS.ErrnoException).code || err.name : String(err);
  return message.split("\n")[0]!.trim();
}

/**
 * openDb, with a failure turned into a DatabaseUnavailableError. The driver's
 * warnings while opening (each failed connection attempt, with its stack)
 * are held back: on failure the error says it once; on success they go to
 * `options.log` (by default stderr, one line each).
 */
export async function openDatabase(options: DbOptions): Promise<Db> {
  const log = options.log ?? ((message: string) => process.stderr.write(`database: ${message.split("\n")[0]}\n`));
  const held: string[] = [];
  let opening = true;
  try {
    const db = await openDb({ ...options, log: (message) => (opening ? held.push(message) : log(message)) });
    opening = false;
    for (const message of held) log(message);
    return db;
  } catch (err) {
    throw new DatabaseUnavailableError(`cannot open the database ${databaseLabel(options.url)}: ${errorReason(err)}`, { cause: err });
  }
}

/**
 * Run `fn` on the database at `url`, a failure becoming one line that says
 * what could not be done to which database (`cannot <doing> the database …`).
 */
export async function onDatabase<T>(url: string, doing: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DatabaseUnavailableError) throw err;
    throw new DatabaseUnavailableError(`cannot ${doing} the database ${databaseLabel(url)}: ${errorReason(err)}`, { cause: err });
  }
}

/** For commands that report a failure themselves: the driver's warnings (a failed connection, with its stack) add nothing. */
export const quietDriver = (): void => {};
