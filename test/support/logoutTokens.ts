import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { jwtVerify, type JWTPayload, type JWTVerifyGetKey } from "jose";

/** The `events` member of a logout token (OIDC Back-Channel Logout 1.0 §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout";

export interface LogoutTokenClaims extends JWTPayload {
  sub?: string;
  sid?: string;
  events: Record<string, unknown>;
}

export interface LogoutTokenExpectations {
  issuer: string;
  audience: string;
  keys: JWTVerifyGetKey;
  /** jti values already accepted: one seen again is refused (§2.6 step 10, optional there). */
  seen?: Set<string>;
}

/**
 * A relying party's check of a logout token, written from OIDC Back-Channel
 * Logout 1.0 §2.6 for the tests (it is no part of the service): the
 * signature by the issuer's keys, `typ` logout+jwt, iss, aud, iat and exp,
 * a jti, the back-channel event, a sub or a sid, and no `nonce`.
 */
export async function verifyLogoutToken(token: string, expected: LogoutTokenExpectations): Promise<LogoutTokenClaims> {
  const { payload } = await jwtVerify(token, expected.keys, {
    issuer: expected.issuer,
    audience: expected.audience,
    typ: "logout+jwt",
    requiredClaims: ["iat", "exp", "jti", "events"],
    maxTokenAge: "5m",
  });
  const claims = payload as LogoutTokenClaims;
  const event = claims.events?.[BACKCHANNEL_LOGOUT_EVENT];
  if (typeof event !== "object" || event === null || Array.isArray(event)) throw new Error("the events claim lacks the back-channel logout event");
  if (typeof claims.sub !== "string" && typeof claims.sid !== "string") throw new Error("neither sub nor sid");
  // §2.6 step 5: a nonce marks an ID token; a logout token carrying one is refused.
  if ("nonce" in claims) throw new Error("a logout token must not contain a nonce");
  if (expected.seen) {
    if (expected.seen.has(claims.jti!)) throw new Error("jti already seen");
    expected.seen.add(claims.jti!);
  }
  return claims;
}

/** One POST the relying party received: its logout token and what became of it. */
export interface ReceivedLogout {
  token: string;
  /** The token's claims when it was accepted; undefined when the fake failed on purpose or the check refused it. */
  claims?: LogoutTokenClaims;
  status: number;
  /** The request's path (the fake serves one path per application). */
  path: string;
  /** The request's method, Content-Type and form fields, as sent (§2.5). */
  method?: string;
  contentType?: string;
  fields?: Record<string, string>;
  /** Why the check refused it. */
  error?: string;
}

/**
 * A relying party's back-channel logout endpoint on a loopback port: it
 * answers 200 for a token `verify` accepts and 400 for one it refuses
 * (§2.8); `failNext` makes the next calls answer 500 (or another status,
 * with headers such as Retry-After) first, and `hold` keeps calls
 * unanswered until `release`.
 */
export class LogoutReceiver {
  readonly received: ReceivedLogout[] = [];
  private server: Server | undefined;
  private failures = 0;
  private failure: { status: number; headers: Record<string, string> } = { status: 500, headers: {} };
  private held: (() => void)[] | undefined;
  private waiters: (() => void)[] = [];
  verify: ((token: string, path: string) => Promise<LogoutTokenClaims>) | undefined;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => void this.answer(req.url ?? "/", req.method ?? "", req.headers["content-type"] ?? "", Buffer.concat(chunks).toString(), (status, headers) => {
        res.writeHead(status, { "cache-control": "no-store", ...headers });
        res.end();
      }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return this;
  }

  /** The URL of the endpoint for one application (a path of its own). */
  url(path = "/backchannel-logout"): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${path}`;
  }

  failNext(count: number, status = 500, headers: Record<string, string> = {}): void {
    this.failures = count;
    this.failure = { status, headers };
  }

  hold(): void {
    this.held = [];
  }

  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const go of held) go();
  }

  /** The accepted tokens, once at least `count` have arrived (or throws after `ms`). */
  async accepted(count: number, ms = 10_000): Promise<ReceivedLogout[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const ok = this.received.filter((r) => r.status === 200);
      if (ok.length >= count) return ok;
      if (Date.now() > deadline) throw new Error(`${ok.length} of ${count} logout tokens accepted within ${ms} ms (${this.received.length} calls)`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  /** Forget what was received. */
  clear(): void {
    this.received.length = 0;
  }

  async close(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async answer(path: string, method: string, contentType: string, body: string, send: (status: number, headers?: Record<string, string>) => void): Promise<void> {
    if (this.held) await new Promise<void>((resolve) => this.held!.push(resolve));
    const form = contentType.startsWith("application/x-www-form-urlencoded") ? new URLSearchParams(body) : new URLSearchParams();
    const token = form.get("logout_token") ?? "";
    const sent = { path, method, contentType, fields: Object.fromEntries(form) };
    let entry: ReceivedLogout;
    let headers: Record<string, string> = {};
    if (this.failures > 0) {
      this.failures--;
      entry = { token, status: this.failure.status, ...sent };
      headers = this.failure.headers;
    } else {
      try {
        entry = { token, claims: await this.verify!(token, path), status: 200, ...sent };
      } catch (err) {
        entry = { token, status: 400, error: (err as Error).message, ...sent };
      }
    }
    this.received.push(entry);
    send(entry.status, headers);
    for (const wake of this.waiters.splice(0)) wake();
  }
}
