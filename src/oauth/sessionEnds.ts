import type { Clock } from "../shared/clock.js";
import type { SessionEndReason } from "../store/backchannelLogouts.js";
import type { Store } from "../store/index.js";
import { sha256 } from "./secrets.js";

export type { SessionEndReason } from "../store/backchannelLogouts.js";

/**
 * The one way a browser session ends (issue 45 §6). Each end deletes the
 * session and, in the same transaction, queues a logout token for every
 * client that was issued a code or token from it and has a
 * backchannelLogoutUri (OIDC Back-Channel Logout 1.0 §2.5); `deliver` then
 * starts the delivery (backchannelLogout.ts), off the caller's path.
 *
 * Store writes that end all of a user's sign-ins with another change
 * (disabling or deleting the user, a password reset: revocations.ts
 * `endSignIns`) queue the same rows in their own transaction; their domain
 * code calls `queued()` after them.
 */
export class SessionEnds {
  constructor(
    private readonly store: Pick<Store, "sessions">,
    private readonly clock: Clock,
    /** Starts delivering what was queued; nothing by default (the delivery also polls). */
    private deliver: () => void = () => {},
  ) {}

  /** Where queued logouts are announced (set once the delivery exists). */
  deliverWith(deliver: () => void): void {
    this.deliver = deliver;
  }

  /** One session ended, named by the hash of its cookie; false when there was none. */
  async sessionEnded(idHash: string, reason: SessionEndReason): Promise<boolean> {
    const ended = await this.store.sessions.end(idHash, reason, this.clock.now());
    if (ended) this.deliver();
    return ended;
  }

  /**
   * Every session of a user ends: the entry point for a password change
   * (the account page), or any other change that must sign the user out
   * everywhere. `keepCookie`, if given, is the one session kept (the
   * browser that made the change). Returns how many ended.
   */
  async userSessionsEnded(userId: string, reason: SessionEndReason, keepCookie?: string): Promise<number> {
    const ended = await this.store.sessions.endAllOf(userId, reason, this.clock.now(), keepCookie ? sha256(keepCookie) : undefined);
    if (ended > 0) this.deliver();
    return ended;
  }

  /** Sessions ended inside another store write (endSignIns): deliver now rather than at the next poll. */
  queued(): void {
    this.deliver();
  }
}
