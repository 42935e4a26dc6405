import { compactVerify, createLocalJWKSet } from "jose";
import type { Store } from "../store/index.js";
import { OAuthError } from "./errors.js";
import { applicationRedirectAllowed } from "./redirectUris.js";
import type { KeyRing } from "./keys.js";
import { SIGNING_ALGS } from "../shared/model.js";
import type { SessionManager } from "./sessions.js";
import { LOGOUT_TOKEN_TYPE } from "./logoutTokens.js";

/** OpenID Connect RP-Initiated Logout 1.0 parameters; absent ones are "". */
export interface EndSessionParams {
  idTokenHint: string;
  postLogoutRedirectUri: string;
  state: string;
  clientId: string;
}

export interface EndSessionDeps {
  store: Store;
  keys: KeyRing;
  issuer: string;
  sessions: SessionManager;
}

/** A sign-out request found valid. */
export interface CheckedEndSession {
  /** The post-logout redirect with `state`, or undefined when none was asked for. */
  redirect: string | undefined;
  /** The client the request names: its client_id, else the hint's audience; "" for none. */
  clientId: string;
  /**
   * Whether the session may end without asking: an ID token of ours came as
   * id_token_hint, and its `sub` is the user of the browser's session (or
   * the browser has no live session, so nothing is ended). A relying party
   * the user signed in to asks. Otherwise anyone may have sent the browser
   * here, with any ID token they hold, and the user must confirm
   * (RP-Initiated Logout 1.0 §2). A hint with `sid` must name this very
   * session: an ID token from an earlier session of the user vouches for
   * nothing about this one.
   */
  immediate: boolean;
}

/**
 * Checks a sign-out request for the browser session behind `sessionCookie`,
 * changing nothing: a bad one is refused before any session ends.
 */
export async function checkEndSession(deps: EndSessionDeps, params: EndSessionParams, sessionCookie: string | undefined): Promise<CheckedEndSession> {
  const hint = params.idTokenHint ? await checkedHint(deps, params.idTokenHint) : undefined;
  if (params.clientId && hint && !hint.audience.includes(params.clientId)) {
    throw new OAuthError("invalid_request", "client_id does not match the audience of id_token_hint");
  }
  const clientId = params.clientId || hint?.audience[0] || "";
  const redirect = params.postLogoutRedirectUri ? await registeredRedirect(deps, clientId, params) : undefined;
  let immediate = false;
  if (hint) {
    const signedIn = await deps.sessions.find(sessionCookie);
    immediate = signedIn === undefined || (signedIn.user.id === hint.subject && (hint.sid === undefined || hint.sid === signedIn.session.sid));
  }
  return { redirect, clientId, immediate };
}

/**
 * Sign-out at once: check the request, end the browser session and say
 * where the browser goes next (the redirect, or undefined). The browser
 * front door asks the user first when no hint vouches for the request.
 */
export async function endSession(
  deps: EndSessionDeps,
  sessionCookie: string | undefined,
  params: EndSessionParams,
): Promise<string | undefined> {
  const { redirect } = await checkEndSession(deps, params, sessionCookie);
  await deps.sessions.end(sessionCookie);
  return redirect;
}

/**
 * The post-logout redirect, only to a URI registered for the client (§3),
 * matched as redirect_uri is (`applicationRedirectAllowed`): exactly, or on
 * a loopback address with any port (RFC 8252 §7.3), the console's excepted.
 */
async function registeredRedirect(deps: EndSessionDeps, clientId: string, params: EndSessionParams): Promise<string> {
  if (!clientId) throw new OAuthError("invalid_request", "post_logout_redirect_uri needs id_token_hint or client_id");
  const app = await deps.store.applications.findByClientId(clientId);
  if (!app || !applicationRedirectAllowed(app, params.postLogoutRedirectUri)) {
    throw new OAuthError("invalid_request", "post_logout_redirect_uri is not registered for this client");
  }
  const target = new URL(params.postLogoutRedirectUri);
  if (params.state) target.searchParams.set("state", params.state);
  return target.toString();
}

/**
 * Checks that the hint is an ID token this service signed and returns its
 * audience and subject. An expired ID token is still a valid hint (§2), so
 * only the signature and the issuer are checked.
 */
async function checkedHint(deps: EndSessionDeps, hint: string): Promise<{ audience: string[]; subject: string; sid?: string }> {
  const invalid = new OAuthError("invalid_request", "id_token_hint is not an ID token issued by this service");
  let claims: { iss?: unknown; aud?: unknown; sub?: unknown; sid?: unknown };
  try {
    const keys = createLocalJWKSet({ keys: await deps.keys.publicJwks() });
    const { payload, protectedHeader } = await compactVerify(hint, keys, { algorithms: [...SIGNING_ALGS] });
    // Access and logout tokens are signed by the same keys; they are not ID tokens.
    if (protectedHeader.typ === "at+jwt" || protectedHeader.typ === LOGOUT_TOKEN_TYPE) throw invalid;
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw invalid;
  }
  if (claims.iss !== deps.issuer || typeof claims.sub !== "string") throw invalid;
  const audience = ([] as unknown[]).concat(claims.aud ?? []).filter((a): a is string => typeof a === "string");
  if (audience.length === 0) throw invalid;
  return { audience, subject: claims.sub, ...(typeof claims.sid === "string" ? { sid: claims.sid } : {}) };
}

/** RP-Initiated Logout as the doors call it. */
export class SignOut {
  constructor(private readonly deps: EndSessionDeps) {}

  /** Whether the request holds, and whether it may end `sessionCookie`'s session without asking. */
  check(params: EndSessionParams, sessionCookie: string | undefined): Promise<CheckedEndSession> {
    return checkEndSession(this.deps, params, sessionCookie);
  }

  end(sessionCookie: string | undefined, params: EndSessionParams): Promise<string | undefined> {
    return endSession(this.deps, sessionCookie, params);
  }
}
