import { epochSeconds, type Clock } from "../shared/clock.js";
import type { ApplicationRepository } from "../store/applications.js";
import { authorizationResponse, signInSatisfies, type AuthorizationResponse, type AuthorizeDeps } from "./authorize.js";
import { resolveRedirect, validateAuthorizeRequest, type AuthorizeRequest, type AuthorizeValidation } from "./authorizeRequest.js";
import { OAuthError } from "./errors.js";
import type { ResourceIndicators } from "./resourceIndicators.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** The authorize endpoint's rules (RFC 6749 §3.1, OIDC Core §3.1.2), as the browser door asks them. */
export class AuthorizeEndpoint {
  constructor(
    private readonly apps: Pick<ApplicationRepository, "findByClientId">,
    private readonly clock: Clock,
    private readonly responses: AuthorizeDeps,
    private readonly resources?: ResourceIndicators,
    /** Client ID metadata documents: a client named by one is fetched (or made) here, before the request is checked. */
    private readonly documents?: { admit(clientId: string, clientAddress: string | undefined): Promise<void> },
  ) {}

  /** The request checked, with its application; or the error and where it may go. `clientAddress`: the browser's. */
  async validate(params: ReadonlyMap<string, string>, clientAddress?: string): Promise<AuthorizeValidation> {
    const clientId = params.get("client_id");
    try {
      if (clientId && this.documents) await this.documents.admit(clientId, clientAddress);
    } catch (err) {
      // No redirect_uri is trusted yet: the user is told, the client is not.
      if (err instanceof OAuthError) return { ok: false, error: err };
      throw err;
    }
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

  /** Issue the code and/or tokens for a signed-in user; `amr`: what the sign-in proved (RFC 8176). */
  respond(app: ApplicationRecord, request: AuthorizeRequest, user: UserRecord, authTime: number, amr?: readonly string[]): Promise<AuthorizationResponse> {
    return authorizationResponse(app, request, user, authTime, this.responses, amr);
  }
}
