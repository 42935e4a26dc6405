import type { AuthorizeRequest, ResponseMode, ResponseTarget } from "./authorizeRequest.js";
import type { AuthorizationCodes } from "./codes.js";
import type { OAuthError } from "./errors.js";
import type { Metrics } from "./metrics.js";
import { clientActor, type AuditTrail } from "../shared/audit.js";
import { grantableScopes } from "./scopes.js";
import type { TokenMinter } from "./tokens.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";
import type { SessionRecord } from "../store/sessions.js";
import type { SessionManager } from "./sessions.js";

export interface AuthorizeDeps {
  issuer: string;
  minter: TokenMinter;
  codes: AuthorizationCodes;
  metrics: Metrics;
  audit: AuditTrail;
  /** Remembers which clients a session issued to, for back-channel logout. */
  sessions?: Pick<SessionManager, "issuedTo">;
}

/** The browser session a response is issued from. */
export type IssuingSession = Pick<SessionRecord, "sid" | "expiresAt">;

/**
 * Whether an existing sign-in made at `authTime` (epoch seconds) may answer
 * this request without the login form (OIDC Core §3.1.2.1 prompt, max_age).
 */
export function signInSatisfies(request: AuthorizeRequest, authTime: number, nowSeconds: number): boolean {
  if (request.prompt.includes("login")) return false;
  return request.maxAge === undefined || nowSeconds - authTime <= request.maxAge;
}

/**
 * An authorization response (or error) on its way to the client: where it
 * goes, how (query, fragment or form post), and every parameter, `state` and
 * `iss` (RFC 9207) included.
 */
export interface AuthorizationResponse {
  redirectUri: string;
  responseMode: ResponseMode;
  params: Record<string, string>;
}

/**
 * Answer a validated request for a signed-in user: issue the code, the
 * access token and/or the ID token.
 */
export async function authorizationResponse(
  app: ApplicationRecord,
  request: AuthorizeRequest,
  user: UserRecord,
  authTime: number,
  deps: AuthorizeDeps,
  amr?: readonly string[],
  session?: IssuingSession,
): Promise<AuthorizationResponse> {
  const { nonce, claims, resources } = request;
  // Back-Channel Logout 1.0 §2.5: this client is told when the session ends; its ID tokens name the session.
  const sid = session?.sid || undefined;
  if (session && deps.sessions) await deps.sessions.issuedTo(session, app.clientId);
  // The admin scope is dropped here for anyone but an admin at the console; the minter checks again.
  const scopes = grantableScopes(request.scopes, app.clientId, user);
  const parts = new Set(request.responseType.split(" "));
  const params: Record<string, string> = {};
  if (parts.has("code")) {
    params.code = await deps.codes.issue({
      clientId: app.clientId,
      userId: user.id,
      redirectUri: request.redirectUri,
      scopes,
      nonce,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      authTime,
      claims,
      amr,
      resources,
      dpopJkt: request.dpopJkt,
      sid,
    }, app);
  }
  if (parts.has("token")) {
    // RFC 6749 §4.2.2: the authorization endpoint never issues a refresh token.
    const tokens = await deps.minter.mint({ app, user, scopes, authTime, amr, nonce, claims, resources, idToken: false, refreshToken: false, sid });
    Object.assign(params, { access_token: tokens.accessToken, token_type: tokens.tokenType, expires_in: String(tokens.expiresIn), scope: tokens.scope });
  }
  if (parts.has("id_token")) {
    // OIDC Core §3.3.2.11: at_hash and c_hash bind the ID token to the token and code beside it; s_hash to the state.
    const travelling = { accessToken: params.access_token, code: params.code, state: request.state };
    params.id_token = await deps.minter.mintIdToken({ app, user, scopes, authTime, amr, nonce, claims, sid, ...travelling });
  }
  if (parts.has("token") || parts.has("id_token")) {
    deps.metrics.tokensIssued("implicit");
    recordImplicit(deps.audit, app, user, scopes, request.responseType);
  }
  return withStateAndIssuer(request, params, deps.issuer);
}

function recordImplicit(audit: AuditTrail, app: ApplicationRecord, user: UserRecord, scopes: string[], responseType: string): void {
  audit.record({
    event: "token_issued",
    outcome: "success",
    actor: clientActor(app),
    clientId: app.clientId,
    userId: user.id,
    userName: user.name,
    details: { grantType: "implicit", responseType, scope: scopes.join(" ") },
  });
}

/** An error sent back to the client (RFC 6749 §4.1.2.1, §4.2.2.1). */
export function errorResponse(target: ResponseTarget, error: OAuthError, issuer: string): AuthorizationResponse {
  return withStateAndIssuer(target, { error: error.code, error_description: error.description }, issuer);
}

function withStateAndIssuer(target: ResponseTarget, params: Record<string, string>, issuer: string): AuthorizationResponse {
  return {
    redirectUri: target.redirectUri,
    responseMode: target.responseMode,
    params: { ...params, ...(target.state !== undefined ? { state: target.state } : {}), iss: issuer },
  };
}

/**
 * The redirect_uri with the response parameters in its query or fragment
 * (not for form_post, which the browser carries as a POST). A query the
 * client registered is kept.
 */
export function responseLocation(response: AuthorizationResponse): string {
  const url = new URL(response.redirectUri);
  if (response.responseMode === "fragment") {
    url.hash = new URLSearchParams(response.params).toString();
  } else {
    for (const [name, value] of Object.entries(response.params)) url.searchParams.append(name, value);
  }
  return url.href;
}
