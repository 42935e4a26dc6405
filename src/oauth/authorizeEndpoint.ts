import { epochSeconds, type Clock } from "../shared/clock.js";
import type { ApplicationRepository } from "../store/applications.js";
import { authorizationResponse, signInSatisfies, type AuthorizationResponse, type AuthorizeDeps, type IssuingSession } from "./authorize.js";
import { refusedRequest, resolveRedirect, validateAuthorizeRequest, type AuthorizeRequest, type AuthorizeValidation } from "./authorizeRequest.js";
import type { AuthorizeSources } from "./authorizeSources.js";
import { OAuthError } from "./errors.js";
import { fapi2AuthorizeProblem } from "./fapi2.js";
import type { ResourceIndicators } from "./resourceIndicators.js";
import { ACCOUNT_PAGE_CLIENT_ID, accountPageApplication } from "./ownPageSignIn.js";
import type { OwnAccountRepository } from "../store/ownAccounts.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** The authorize endpoint's rules (RFC 6749 §3.1, OIDC Core §3.1.2), as the browser door asks them. */
export class AuthorizeEndpoint {
  constructor(
    private readonly apps: Pick<ApplicationRepository, "findByClientId">,
    private readonly clock: Clock,
    private readonly responses: AuthorizeDeps,
    private readonly resources?: ResourceIndicators,
    /** Where a sign-in to an `mfa: required` application is noted (the account page asks before the last factor goes). */
    private readonly mfaSignIns?: Pick<OwnAccountRepository, "noteMfaSignIn">,
    /** Pushed requests and request objects; without them, only plain parameters. */
    private readonly sources?: AuthorizeSources,
    /** --require-pushed-authorization-requests: every client must push (RFC 9126 §5). */
    readonly requirePushed = false,
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
    // FAPI 2.0 §5.3.2.2: PAR and PKCE S256 for a fapi2 client (oauth/fapi2.ts).
    const fapi2 = validation.ok ? fapi2AuthorizeProblem(validation.app, validation.request, resolved.pushed) : undefined;
    if (fapi2) return refusedRequest(resolved.params, this.apps, fapi2);
    return validation;
  }

  /** The application a pending request names, while it exists. */
  application(clientId: string): Promise<ApplicationRecord | undefined> {
    if (clientId === ACCOUNT_PAGE_CLIENT_ID) return Promise.resolve(accountPageApplication());
    return this.apps.findByClientId(clientId);
  }

  /**
   * The application a pending request returns to, its redirect URI checked
   * again: it may have changed meanwhile. A sign-in for one of our own pages
   * returns to that page, under its application's policy.
   */
  async returnTo(request: AuthorizeRequest): Promise<ApplicationRecord> {
    if (request.returnPath === undefined) return resolveRedirect(this.apps, request.clientId, request.redirectUri);
    const app = await this.application(request.clientId);
    if (!app) throw new OAuthError("invalid_request", "the application of this sign-in no longer exists");
    return app;
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
  async respond(
    app: ApplicationRecord,
    request: AuthorizeRequest,
    user: UserRecord,
    authTime: number,
    amr?: readonly string[],
    session?: IssuingSession,
  ): Promise<AuthorizationResponse> {
    // A sign-in for our own pages issues nothing: it only makes a session (web/signIn.ts).
    if (request.returnPath !== undefined) throw new OAuthError("invalid_request", "this sign-in issues no code");
    if (app.mfa === "required") await this.mfaSignIns?.noteMfaSignIn(user.id, app.clientId, this.clock.now());
    return authorizationResponse(app, request, user, authTime, this.responses, amr, session);
  }
}
