import type { AuthorizeRequest, ResponseTarget } from "./authorizeRequest.js";
import type { AuthorizationCodes } from "./codes.js";
import type { OAuthError } from "./errors.js";
import type { Metrics } from "./metrics.js";
import type { TokenMinter } from "./tokens.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

export interface AuthorizeDeps {
  issuer: string;
  minter: TokenMinter;
  codes: AuthorizationCodes;
  metrics: Metrics;
}

/**
 * Whether an existing sign-in made at `authTime` (epoch seconds) may answer
 * this request without the login form (OIDC Core §3.1.2.1 prompt, max_age).
 */
export function signInSatisfies(request: AuthorizeRequest, authTime: number, nowSeconds: number): boolean {
  if (request.prompt.includes("login")) return false;
  return request.maxAge === undefined || nowSeconds - authTime <= request.maxAge;
}

/**
 * Answer a validated request for a signed-in user: issue the code, the
 * access token or the ID token, and return where to send the browser.
 */
export async function authorizationLocation(
  app: ApplicationRecord,
  request: AuthorizeRequest,
  user: UserRecord,
  authTime: number,
  deps: AuthorizeDeps,
): Promise<string> {
  const { scopes, nonce } = request;
  let params: Record<string, string>;
  switch (request.responseType) {
    case "code": {
      const code = await deps.codes.issue({
        clientId: app.clientId,
        userId: user.id,
        redirectUri: request.redirectUri,
        scopes,
        nonce,
        codeChallenge: request.codeChallenge,
        codeChallengeMethod: request.codeChallengeMethod,
        authTime,
      });
      params = { code };
      break;
    }
    case "token": {
      // RFC 6749 §4.2.2: the implicit grant never issues a refresh token.
      const tokens = await deps.minter.mint({ app, user, scopes, authTime, idToken: false, refreshToken: false });
      params = {
        access_token: tokens.accessToken,
        token_type: tokens.tokenType,
        expires_in: String(tokens.expiresIn),
        scope: tokens.scope,
      };
      deps.metrics.tokensIssued("implicit");
      break;
    }
    case "id_token":
      params = { id_token: await deps.minter.mintIdToken({ app, user, scopes, authTime, nonce }) };
      deps.metrics.tokensIssued("implicit");
      break;
  }
  return responseLocation(request, params, deps.issuer);
}

/** An error sent back to the client (RFC 6749 §4.1.2.1, §4.2.2.1). */
export function errorLocation(target: ResponseTarget, error: OAuthError, issuer: string): string {
  return responseLocation(target, { error: error.code, error_description: error.description }, issuer);
}

/**
 * The redirect_uri with the response parameters, `state` and `iss`
 * (RFC 9207) in its query or fragment. A query the client registered is kept.
 */
function responseLocation(target: ResponseTarget, params: Record<string, string>, issuer: string): string {
  const url = new URL(target.redirectUri);
  const all = { ...params, ...(target.state !== undefined ? { state: target.state } : {}), iss: issuer };
  if (target.responseMode === "fragment") {
    url.hash = new URLSearchParams(all).toString();
  } else {
    for (const [name, value] of Object.entries(all)) url.searchParams.append(name, value);
  }
  return url.href;
}
