/**
 * The logger the rest of the code sees. Lines are JSON on stderr; callers
 * pass only values that are safe to log (never secrets or tokens).
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const stderrLogger: Logger = {
  info: (message, fields) => process.stderr.write(JSON.stringify({ level: "info", time: new Date().toISOString(), message, ...fields }) + "\n"),
  error: (message, fields) => process.stderr.write(JSON.stringify({ level: "error", time: new Date().toISOString(), message, ...fields }) + "\n"),
};

export const silentLogger: Logger = { info: () => {}, error: () => {} };

/** An unexpected error as log fields: its message and stack, nothing from the request. */
export function errorFields(err: unknown): Record<string, unknown> {
  return err instanceof Error ? { error: err.message, stack: err.stack } : { error: String(err) };
}
