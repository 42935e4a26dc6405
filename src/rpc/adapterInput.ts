import type { IncomingHttpHeaders, IncomingMessage } from "node:http";

/** The longest delay a Node.js timer takes (about 24.8 days); longer ones fire after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const GRPC_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

function deadlineMs(name: string, value: string): number | undefined {
  if (name === "connect-timeout-ms") return /^\d{1,10}$/.test(value) ? Number(value) : undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  return match ? Number(match[1]) * GRPC_UNIT_MS[match[2]!]! : undefined;
}

/**
 * A deadline longer than a timer can hold is no deadline at all: connect-es
 * (and our own unary door) would arm a timer with it, which Node clamps to
 * 1 ms with a warning, and the call would time out at once. Such a header is
 * dropped; malformed values are left for Connect's parser to refuse with
 * InvalidArgument.
 */
export function dropUntimeableDeadlines(headers: IncomingHttpHeaders): void {
  for (const name of ["grpc-timeout", "connect-timeout-ms"]) {
    const value = headers[name];
    if (typeof value !== "string") continue;
    const ms = deadlineMs(name, value);
    if (ms !== undefined && ms > MAX_TIMER_MS) delete headers[name];
  }
}

/**
 * Headers the Connect adapter would trip over, made harmless before it reads
 * them: deadlines no timer can hold (above), and a missing Host. An HTTP/1.0
 * request may come without Host, from which the adapter builds the request
 * URL; it throws (a 500) without one. The URL only labels the call, so any
 * authority will do.
 */
export function prepareForConnect(req: IncomingMessage): void {
  dropUntimeableDeadlines(req.headers);
  if (req.headers.host === undefined && !("authority" in req)) req.headers.host = "localhost";
}
