import { randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import { epochSeconds, type Clock } from "../shared/clock.js";
import type { ApplicationRecord } from "../shared/model.js";
import type { Store } from "../store/index.js";
import type { KeyRing } from "./keys.js";

/** The `events` member that makes a JWT a logout token (OIDC Back-Channel Logout 1.0 §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout";

/** §2.4 recommends explicit typing: `logout+jwt`. */
export const LOGOUT_TOKEN_TYPE = "logout+jwt";

/** How long a logout token is accepted: long enough for one delivery, a retry signs a new one. */
export const LOGOUT_TOKEN_TTL_SECONDS = 120;

/** Whom a logout token is about: the user and the session that ended. */
export interface LogoutSubject {
  sub: string;
  sid: string;
}

/**
 * Signs logout tokens (OIDC Back-Channel Logout 1.0 §2.4) as the
 * application's ID tokens are signed (its signingAlg, keys.ts), each with a
 * `jti` of its own. They carry both `sub` and `sid` (§2.4 allows both, and
 * backchannelLogoutSessionRequired asks for `sid`), and never a `nonce`
 * (§2.4: a nonce must not be present, so no logout token passes for an ID token).
 */
export class LogoutTokens {
  constructor(
    private readonly keys: KeyRing,
    private readonly signingKeys: Store["signingKeys"],
    private readonly clock: Clock,
    private readonly issuer: string,
  ) {}

  async sign(app: ApplicationRecord, subject: LogoutSubject): Promise<string> {
    const now = epochSeconds(this.clock);
    const { kid, alg, key } = await this.keys.signingKey(app.signingAlg);
    const exp = now + LOGOUT_TOKEN_TTL_SECONDS;
    const token = await new SignJWT({
      iss: this.issuer,
      aud: app.clientId,
      iat: now,
      exp,
      jti: randomUUID(),
      sub: subject.sub,
      sid: subject.sid,
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    })
      .setProtectedHeader({ alg, kid, typ: LOGOUT_TOKEN_TYPE })
      .sign(key);
    // No row stands for it: its key stays published until it expires, as for an ID token alone.
    await this.signingKeys.holdUntil(kid, exp * 1000);
    return token;
  }
}
