import { epochSeconds, type Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import type { SessionRecord } from "../store/sessions.js";
import { SessionEnds } from "./sessionEnds.js";
import { randomToken, sha256 } from "./secrets.js";
import type { UserRecord } from "../shared/model.js";

/** What a sign-in proved (RFC 8176 `amr` values) and the second factor it used, if any. */
export interface SignInProof {
  amr: string[];
  factorId?: string;
}

/** Name of the browser session cookie. */
export const SESSION_COOKIE = "identity_session";

/**
 * A Set-Cookie value that makes the browser drop the session cookie. Name
 * and Path must match the cookie as set at sign-in.
 */
export const CLEARED_SESSION_COOKIE = `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax`;

/** Read one cookie's value from a Cookie header. */
export function cookieValue(cookieHeader: string | null | undefined, name: string): string | undefined {
  for (const part of (cookieHeader ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Browser sign-in sessions. The cookie carries a random value; only its
 * SHA-256 is stored, so a database leak does not hand out sessions. Each
 * session also has a random `sid` that ID tokens carry (OIDC Back-Channel
 * Logout 1.0 §2.1); every end goes through `ends` (sessionEnds.ts), which
 * tells the session's clients.
 */
export class SessionManager {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** Session lifetime in seconds. */
    readonly ttlSeconds = 8 * 3600,
    readonly ends: SessionEnds = new SessionEnds(store, clock),
  ) {}

  /**
   * Start a session; returns the cookie value. With `previousCookie`, the
   * browser's session before this sign-in: it ends either way (a fresh
   * cookie at every sign-in: no session fixation), but when it was the same
   * user's, the new one keeps its sid, so its clients' sessions go on.
   */
  async create(user: UserRecord, proof: SignInProof = { amr: ["pwd"] }, previousCookie?: string): Promise<{ cookie: string; session: SessionRecord }> {
    const cookie = randomToken();
    const now = this.clock.now();
    const previous = previousCookie && previousCookie.length <= 200 ? await this.store.sessions.findByHash(sha256(previousCookie)) : undefined;
    const continues = previous !== undefined && previous.userId === user.id && previous.expiresAt > now && previous.sid !== "";
    const session: SessionRecord = {
      idHash: sha256(cookie),
      sid: continues ? previous.sid : randomToken(16),
      userId: user.id,
      authTime: epochSeconds(this.clock),
      createdAt: now,
      expiresAt: now + this.ttlSeconds * 1000,
      amr: proof.amr.join(" "),
      ...(proof.factorId ? { factorId: proof.factorId } : {}),
    };
    if (continues) {
      await this.store.sessions.replace(previous.idHash, session);
    } else {
      if (previous) await this.ends.sessionEnded(previous.idHash, "signed_in_again");
      await this.store.sessions.insert(session);
    }
    return { cookie, session };
  }

  /** The live session and its enabled user behind a request's Cookie header, if any. */
  ofCookieHeader(header: string | undefined): Promise<{ session: SessionRecord; user: UserRecord } | undefined> {
    return this.find(cookieValue(header, SESSION_COOKIE));
  }

  /** The live session and its enabled user behind a cookie value, if any. */
  async find(cookie: string | undefined): Promise<{ session: SessionRecord; user: UserRecord } | undefined> {
    if (!cookie || cookie.length > 200) return undefined;
    const session = await this.store.sessions.findByHash(sha256(cookie));
    if (!session || session.expiresAt <= this.clock.now()) return undefined;
    const user = await this.store.users.findById(session.userId);
    if (!user || user.disabled) return undefined;
    return { session, user };
  }

  /** Sign-out: the session behind the cookie ends, and its clients are told (back-channel logout). */
  async end(cookie: string | undefined): Promise<void> {
    if (cookie && cookie.length <= 200) await this.ends.sessionEnded(sha256(cookie), "sign_out");
  }

  /**
   * Remembers that `clientId` was issued a code or token from `session`,
   * so that its end is told to that client (Back-Channel Logout 1.0 §2.5).
   */
  async issuedTo(session: Pick<SessionRecord, "sid" | "expiresAt">, clientId: string): Promise<void> {
    if (session.sid) await this.store.sessions.addClient(session.sid, clientId, session.expiresAt);
  }
}
