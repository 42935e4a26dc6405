import { parseArgs } from "node:util";
import { resolveServeOption } from "./config.js";
import { openDatabase } from "./database.js";
import { auditLine, listAuditEvents, MAX_AUDIT_PAGE } from "./../domain/auditTrail.js";
import { OAuthError } from "./../oauth/errors.js";
import { AuditEventRepository } from "./../store/auditEvents.js";

export const EVENTS_USAGE = `usage: identity events [--user NAME] [--client ID] [--type EVENT] [--since TIME] [--limit N] [--database URL]

  Prints the stored audit events (docs/audit.md), newest first, one JSON object a line.

  --user NAME    events about this user: their sign-ins and tokens, changes made to them
  --client ID    events about the application with this client_id
  --type EVENT   events of this name (sign_in, token_issued, user_updated ...)
  --since TIME   events at or after TIME: ISO 8601 (2026-11-25T18:00:00Z) or a time ago (30m, 12h, 7d)
  --limit N      at most N events (default 100)
`;

const DEFAULT_LIMIT = 100;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: an ISO 8601 time, or a duration back from `now` (`30m`, `12h`, `7d`). */
export function parseSince(raw: string, now: number): number {
  const ago = /^(\d+)([smhd])$/.exec(raw);
  if (ago) return now - Number(ago[1]) * UNIT_MS[ago[2]!]!;
  const at = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(at)) throw new OAuthError("invalid_request", `--since: expected an ISO 8601 time or a time ago like 30m, 12h, 7d: ${raw}`);
  return at;
}

/**
 * `identity events`: the audit trail read straight from the database, as
 * JSON lines shaped like the log's (plus the event's id and time).
 */
export async function runEventsCommand(args: string[], env: NodeJS.ProcessEnv, now = Date.now()): Promise<string> {
  const { values } = parseArgs({
    args,
    options: {
      user: { type: "string" },
      client: { type: "string" },
      type: { type: "string" },
      since: { type: "string" },
      limit: { type: "string" },
      database: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  const limit = values.limit === undefined ? DEFAULT_LIMIT : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new OAuthError("invalid_request", `--limit: expected a whole number of at least 1: ${values.limit}`);
  const since = values.since === undefined ? undefined : parseSince(values.since, now);
  const db = await openDatabase({ url: resolveServeOption("database", values.database, env) });
  try {
    const repo = new AuditEventRepository(db);
    const lines: string[] = [];
    let pageToken = "";
    do {
      const page = await listAuditEvents(repo, {
        userName: values.user,
        clientId: values.client,
        event: values.type,
        since,
        pageSize: Math.min(MAX_AUDIT_PAGE, limit - lines.length),
        pageToken,
      });
      for (const e of page.events) lines.push(JSON.stringify({ time: new Date(e.time).toISOString(), id: e.id, ...auditLine(e) }));
      pageToken = page.nextPageToken;
    } while (pageToken && lines.length < limit);
    return lines.map((line) => `${line}\n`).join("");
  } finally {
    await db.destroy();
  }
}
