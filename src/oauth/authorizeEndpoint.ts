import { epochSeconds, type Clock } from "../shared/clock.js";
import type { ApplicationRepository } from "../store/applications.js";
import { authorizationResponse, signInSatisfies, type AuthorizationResponse, type AuthorizeDeps, type IssuingSession } from "./authorize.js";
import { resolveRedirect, validateAuthorizeRequest, type AuthorizeRequest, type AuthorizeValidation } from "./authorizeRequest.js";
import type { ResourceIndicators } from "./resourceIndicators.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** The authorize endpoint's rules (RFC 6749 §3.1, OIDC Core §3.1.2), as the browser door asks them. */
export class AuthorizeEndpoint {
  constructor(
    private readonly apps: ApplicationRepository,
    private readonly clock: Clock,
    private readonly responses: AuthorizeDeps,
    private readonly resources?: ResourceIndicators,
  ) {}

  /** The request checked, with its application; or the error and where it may go. */
  validate(params: ReadonlyMap<string, string>): Promise<AuthorizeValidation> {
    return validateAuthorizeRequest(params, this.apps, this.resources);
  }

  /** The application a pending request names, while it exists. */
  application(clientId: string): Promise<ApplicationRecord | undefined> {
    return this.apps.findByClientId(clientId);
  }

  /** The application a pending request returns to, its redirect URI checked again: it may have changed meanwhile. */
  returnTo(request: AuthorizeRequest): Promise<ApplicationRecord> {
    return resolveRedirect(this.apps, request.clientId, request.redirectUri);
  }

  /** Whether a sign-in made at `authTime` (epoch seconds) answers the request without the login form. */
  satisfiedBy(request: AuthorizeRequest, authTime: number): boolean {
    return signInSatisfies(request, authTime, epochSeconds(this.clock));
  }

  /**
   * Issue the code and/or tokens for a signed-in user; `amr`: what the
   * sign-in proved (RFC 8176); `session`: the browser session they come
   * from, whose sid the ID token carries.
   */
  respond(
    app: ApplicationRecord,
    request: AuthorizeRequest,
    user: UserRecord,
    authTime: number,
    amr?: readonly string[],
    session?: IssuingSession,
  ): Promise<AuthorizationResponse> {
    return authorizationResponse(app, request, user, authTime, this.responses, amr, session);
  }
}
