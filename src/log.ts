/**
 * The logger the rest of the code sees. Lines are JSON on stderr; callers
 * pass only values that are safe to log (never secrets or tokens).
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
  process.stderr.write(JSON.stringify({ level, time: new Date().toISOString(), message, ...fields }) + "\n");

export const stderrLogger: Logger = { info: line("info"), warn: line("warn"), error: line("error") };

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };

/** An unexpected error as log fields: its message and stack, nothing from the request. */
export function errorFields(err: unknown): Record<string, unknown> {
  return err instanceof Error ? { error: err.message, stack: err.stack } : { error: String(err) };
}
