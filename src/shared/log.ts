import { writeSync } from "node:fs";
import { hostname } from "node:os";
import pino, { type DestinationStream, type LevelWithSilent } from "pino";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

type Fields = Record<string, unknown>;

/**
 * The logger the rest of the code sees: one JSON object per line (pino).
 * Callers should pass only values that are safe to log; the redaction below
 * is the net under that rule, not a licence to log secrets.
 */
export interface Logger {
  debug(message: string, fields?: Fields): void;
  info(message: string, fields?: Fields): void;
  warn(message: string, fields?: Fields): void;
  error(message: string, fields?: Fields): void;
  /**
   * An info line whose fields are plain JSON data (no cycles, no BigInt),
   * serialized by one JSON.stringify instead of pino's field by field, for
   * the lines every request writes (its request line, its audit events): in
   * a profile of introspection, the request line and its write went from
   * ~17% of the busy time through pino to ~13%.
   * Same line shape, redaction and destination as `info`.
   */
  infoPlain(message: string, fields: Fields): void;
  /** Whether lines of this level are written, to skip building costly fields. */
  enabled(level: Exclude<LogLevel, "silent">): boolean;
}

/**
 * Field names whose values are replaced by "[redacted]" wherever they appear
 * in a line, up to two objects deep (for example `headers.authorization` or
 * `err.request.password`).
 */
export const SECRET_FIELDS = [
  "password",
  "secret",
  "client_secret",
  "clientSecret",
  "code",
  "code_verifier",
  "codeVerifier",
  "token",
  "access_token",
  "accessToken",
  "refresh_token",
  "refreshToken",
  "id_token",
  "idToken",
  "assertion",
  "upstream_token",
  "upstreamToken",
  "upstream_access_token",
  "upstreamAccessToken",
  "upstream_refresh_token",
  "upstreamRefreshToken",
  "admin_token",
  "adminToken",
  "private_jwk",
  "privateJwk",
  "session",
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  // A client page's URL, which may carry its authorization code.
  "referer",
] as const;

const SECRET_NAMES: ReadonlySet<string> = new Set(SECRET_FIELDS);

/**
 * Fields that hold a request target: their query string is censored, as it
 * may carry a token, a code or credentials (an HTTP/2 request's `:path`
 * among its headers, for example).
 */
export const TARGET_FIELDS = [":path", "url"] as const;
const TARGET_NAMES: ReadonlySet<string> = new Set(TARGET_FIELDS);
/** The top level and two objects below it, as the field list promises. */
const REDACT_LEVELS = 3;
const CENSOR = "[redacted]";

/**
 * A copy of `value` with every secret field's value censored, copying only
 * the objects that hold one. pino's own path-based redaction needs wildcard
 * paths for "any depth", and those cost ~200 µs per line: more than the
 * request being logged.
 */
function redact(value: Fields, levels: number): Fields {
  let copy: Fields | undefined;
  for (const key in value) {
    const field = value[key];
    let replacement = field;
    if (SECRET_NAMES.has(key)) replacement = CENSOR;
    else if (typeof field === "string") {
      if (TARGET_NAMES.has(key)) replacement = withoutQuery(field);
    } else if (levels > 1 && typeof field === "object" && field !== null && !Array.isArray(field)) {
      replacement = redact(field as Fields, levels - 1);
    }
    if (replacement !== field) (copy ??= { ...value })[key] = replacement;
  }
  return copy ?? value;
}

function withoutQuery(target: string): string {
  const query = target.indexOf("?");
  return query === -1 ? target : `${target.slice(0, query)}?${CENSOR}`;
}

export interface LoggerOptions {
  level: LogLevel;
  /** pino-pretty output for humans, in a worker thread. */
  pretty?: boolean;
  /** Where lines go; standard error by default. Tests pass a capturing stream. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  // One clock for pino's lines and infoPlain's, formatted once per millisecond for both.
  const time = isoTimeOncePerMillisecond();
  const config: pino.LoggerOptions = {
    level: options.level,
    timestamp: time,
    formatters: {
      log: (fields: Fields) => redact(fields, REDACT_LEVELS),
      // Level names read better than numbers in JSON lines; pino-pretty wants the numbers.
      ...(options.pretty ? {} : { level: (label: string) => ({ level: label }) }),
    },
  };
  const destination = options.destination ?? logDestination(options.pretty ?? false);
  return wrap(pino(config, destination), destination, time, options.pretty ? "30" : '"info"');
}

/** Where a logger's lines go unless told otherwise: pino-pretty (in a worker thread), or standard error in batches. */
export function logDestination(pretty: boolean): DestinationStream {
  return pretty ? pino.transport({ target: "pino-pretty", options: { destination: 2 } }) : stderrLines();
}

/** A destination that keeps its lines back until `release()`. */
export interface HeldLines extends DestinationStream {
  /** Writes the lines kept so far to the target, in order, and every later line at once. */
  release(): void;
}

/**
 * Lines kept back until `release()`: on a terminal, the start's own lines
 * (where it listens, a first start's secrets) come before any log line.
 * Lines still held when the process exits (a start that failed before
 * releasing them) are written to standard error then, as they are.
 */
export function heldLines(target: DestinationStream): HeldLines {
  let held: string[] | undefined = [];
  const atExit = () => {
    if (held && held.length > 0) writeSync(2, held.join(""));
    held = undefined;
  };
  process.on("exit", atExit);
  return {
    write(line: string) {
      if (held) held.push(line);
      else target.write(line);
    },
    release() {
      if (!held) return;
      const lines = held;
      held = undefined;
      process.off("exit", atExit);
      for (const line of lines) target.write(line);
    },
  };
}

/**
 * pino's ISO timestamp, formatted once per millisecond instead of once per
 * line: under load many lines share a millisecond.
 */
function isoTimeOncePerMillisecond(): () => string {
  let formattedAt = -1;
  let formatted = "";
  return () => {
    const now = Date.now();
    if (now !== formattedAt) {
      formattedAt = now;
      formatted = `,"time":"${new Date(now).toISOString()}"`;
    }
    return formatted;
  };
}

/** How long a line may wait for the lines after it, and how much may wait. */
const FLUSH_AFTER_MS = 10;
const FLUSH_AT_CHARS = 64 * 1024;

let stderr: DestinationStream | undefined;

/**
 * Standard error, written synchronously but at most every 10 ms (or 64 KiB):
 * under load one write carries the lines of many requests instead of one
 * syscall each (once per event-loop turn, the write was ~5% of an
 * introspection's main-thread time). Lines still pending when the process
 * exits are written then, so only a kill that skips `exit` loses them.
 * Shared by every logger of the process, so lines keep their order.
 */
function stderrLines(): DestinationStream {
  if (stderr) return stderr;
  const out = pino.destination({ dest: 2, sync: true });
  let pending = "";
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending === "") return;
    const lines = pending;
    pending = "";
    out.write(lines);
  };
  process.on("exit", flush);
  stderr = {
    write(line: string) {
      pending += line;
      if (pending.length >= FLUSH_AT_CHARS) flush();
      // Unreferenced: a pending line must not keep an otherwise finished process alive; `exit` writes it.
      else timer ??= setTimeout(flush, FLUSH_AFTER_MS).unref();
    },
  };
  return stderr;
}

function wrap(logger: pino.Logger, destination: DestinationStream, time: () => string, infoLevel: string): Logger {
  // pino's envelope, in its order: level, time, pid and hostname first, msg last.
  const head = `{"level":${infoLevel}`;
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())},`;
  return {
    debug: (message, fields) => logger.debug(fields ?? {}, message),
    info: (message, fields) => logger.info(fields ?? {}, message),
    infoPlain: (message, fields) => {
      if (!logger.isLevelEnabled("info")) return;
      const json = JSON.stringify(redact(fields, REDACT_LEVELS));
      const body = json.length > 2 ? `${json.slice(1, -1)},` : "";
      destination.write(`${head}${time()}${base}${body}"msg":${JSON.stringify(message)}}\n`);
    },
    warn: (message, fields) => logger.warn(fields ?? {}, message),
    error: (message, fields) => logger.error(fields ?? {}, message),
    enabled: (level) => logger.isLevelEnabled(level as LevelWithSilent),
  };
}

const nothing = () => {};
export const silentLogger: Logger = { debug: nothing, info: nothing, infoPlain: nothing, warn: nothing, error: nothing, enabled: () => false };

/** An unexpected error as log fields: its message and stack, nothing from the request. */
export function errorFields(err: unknown): Fields {
  return err instanceof Error ? { error: err.message, stack: err.stack } : { error: String(err) };
}
