import { noAudit, recordAdminAction, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { echo, OAuthError } from "../oauth/errors.js";
import { sha256 } from "../oauth/secrets.js";
import type { Store } from "../store/index.js";
import type { SessionRecord } from "../store/sessions.js";
import type { SessionEnds } from "../oauth/sessionEnds.js";
import type { RefreshGrantRecord } from "../store/userSignIns.js";
import type { UserRecord } from "../shared/model.js";

/** A browser session as administration sees it: a handle in place of its cookie's hash. */
export interface SessionView extends Omit<SessionRecord, "idHash" | "userId" | "sid"> {
  id: string;
}

/**
 * A user's sign-ins, listed and ended by administration. A session is named
 * by a handle derived from the hash of its cookie, so neither the cookie nor
 * the key it is stored under leaves the service; a refresh token is named by
 * its grant (family) id, which revokes the grant's every token.
 */
export class UserSessions {
  constructor(
    private readonly store: Pick<Store, "users" | "userSignIns">,
    private readonly clock: Clock,
    private readonly audit: AuditTrail = noAudit,
    /** Where sessions end, their clients told (oauth/sessionEnds.ts). */
    private readonly ends?: SessionEnds,
  ) {}

  async list(userName: string): Promise<{ user: UserRecord; sessions: SessionView[]; refreshTokens: RefreshGrantRecord[] }> {
    const user = await this.user(userName);
    const now = this.clock.now();
    const [sessions, refreshTokens] = await Promise.all([
      this.store.userSignIns.sessions(user.id, now),
      this.store.userSignIns.refreshGrants(user.id, now),
    ]);
    return {
      user,
      sessions: sessions.map(({ idHash, userId: _user, sid: _sid, ...rest }) => ({ id: sessionHandle(idHash), ...rest })),
      refreshTokens,
    };
  }

  async revokeSession(userName: string, sessionId: string): Promise<UserRecord> {
    const user = await this.user(userName);
    const session = (await this.store.userSignIns.sessions(user.id, this.clock.now())).find((s) => sessionHandle(s.idHash) === sessionId);
    const ended = session && (this.ends ? await this.ends.sessionEnded(session.idHash, "admin_revoked") : await this.store.userSignIns.endSession(user.id, session.idHash, this.clock.now()));
    if (!ended) {
      throw new OAuthError("not_found", `${echo(userName)} has no session ${echo(sessionId)}`);
    }
    this.recordRevoked(user, { sessions: 1, refreshTokens: 0 });
    return user;
  }

  async revokeRefreshToken(userName: string, grantId: string): Promise<UserRecord> {
    const user = await this.user(userName);
    if (!grantId || !(await this.store.userSignIns.revokeGrant(user.id, grantId, this.clock.now()))) {
      throw new OAuthError("not_found", `${echo(userName)} has no refresh token ${echo(grantId)}`);
    }
    this.recordRevoked(user, { sessions: 0, refreshTokens: 1 });
    return user;
  }

  async revokeAll(userName: string): Promise<{ user: UserRecord; sessions: number; refreshTokens: number }> {
    const user = await this.user(userName);
    const ended = await this.store.userSignIns.endAll(user.id, this.clock.now());
    if (ended.sessions > 0) this.ends?.queued();
    this.recordRevoked(user, { sessions: ended.sessions, refreshTokens: ended.grants });
    return { user, sessions: ended.sessions, refreshTokens: ended.grants };
  }

  // Counts only: a session's handle and a grant's id stay out of the audit trail.
  private recordRevoked(user: UserRecord, ended: { sessions: number; refreshTokens: number }): void {
    recordAdminAction(this.audit, "sessions_revoked", { name: user.name, userId: user.id, userName: user.name }, ended);
  }

  private async user(name: string): Promise<UserRecord> {
    const user = name ? await this.store.users.findByName(name) : undefined;
    if (!user) throw new OAuthError("not_found", `no user named ${echo(name)}`);
    return user;
  }
}

// A prefix of its own, so the handle is no hash used anywhere else.
export const sessionHandle = (idHash: string) => sha256(`session handle:${idHash}`);
