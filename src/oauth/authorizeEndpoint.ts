import { epochSeconds, type Clock } from "../shared/clock.js";
import type { ApplicationRepository } from "../store/applications.js";
import { authorizationResponse, signInSatisfies, type AuthorizationResponse, type AuthorizeDeps } from "./authorize.js";
import { refusedRequest, resolveRedirect, validateAuthorizeRequest, type AuthorizeRequest, type AuthorizeValidation } from "./authorizeRequest.js";
import type { AuthorizeSources } from "./authorizeSources.js";
import { OAuthError } from "./errors.js";
import type { ResourceIndicators } from "./resourceIndicators.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** The authorize endpoint's rules (RFC 6749 §3.1, OIDC Core §3.1.2), as the browser door asks them. */
export class AuthorizeEndpoint {
  constructor(
    private readonly apps: ApplicationRepository,
    private readonly clock: Clock,
    private readonly responses: AuthorizeDeps,
    private readonly resources?: ResourceIndicators,
    /** Pushed requests and request objects; without them, only plain parameters. */
    private readonly sources?: AuthorizeSources,
    /** --require-pushed-authorization-requests: every client must push (RFC 9126 §5). */
    readonly requirePushed = false,
  ) {}

  /** The request checked, with its application; or the error and where it may go. */
  async validate(params: ReadonlyMap<string, string>): Promise<AuthorizeValidation> {
    let resolved = { params, pushed: false };
    try {
      if (this.sources) resolved = await this.sources.resolve(params);
    } catch (err) {
      if (err instanceof OAuthError) return refusedRequest(params, this.apps, err);
      throw err;
    }
    const validation = await validateAuthorizeRequest(resolved.params, this.apps, this.resources);
    // RFC 9126 §5: such a client's requests come through PAR, or not at all.
    if (validation.ok && !resolved.pushed && (this.requirePushed || validation.app.requirePushedAuthorizationRequests)) {
      const error = new OAuthError("invalid_request", "this client must push its authorization request first (PAR, RFC 9126)");
      return refusedRequest(resolved.params, this.apps, error);
    }
    return validation;
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

  /** Issue the code and/or tokens for a signed-in user; `amr`: what the sign-in proved (RFC 8176). */
  respond(app: ApplicationRecord, request: AuthorizeRequest, user: UserRecord, authTime: number, amr?: readonly string[]): Promise<AuthorizationResponse> {
    return authorizationResponse(app, request, user, authTime, this.responses, amr);
  }
}
