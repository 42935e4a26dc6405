import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { requireUserToken } from "./accessTokens.js";
import { OAuthError } from "./errors.js";
import type { SessionManager } from "./sessions.js";
import type { UserRecord } from "../shared/model.js";

/** How a caller may prove who they are: a Bearer access token or a session cookie. */
export interface Caller {
  accessToken?: string;
  sessionCookie?: string;
}

/**
 * The user behind a call. A Bearer token, when sent, decides alone: a bad one
 * is `invalid_token` even if a session cookie rides along.
 */
export async function signedInUser(
  deps: { store: Store; clock: Clock; sessions: SessionManager },
  caller: Caller,
): Promise<UserRecord> {
  if (caller.accessToken !== undefined) return (await requireUserToken(deps.store, deps.clock, caller.accessToken)).user;
  const found = await deps.sessions.find(caller.sessionCookie);
  if (found) return found.user;
  throw new OAuthError(
    "login_required",
    caller.sessionCookie ? "the session has ended; sign in again" : "not signed in: send a session cookie or a Bearer access token",
  );
}
