import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { errorResponse } from "../oauth/authorize.js";
import type { AuthorizeRequest } from "../oauth/authorizeRequest.js";
import { OAuthError } from "../oauth/errors.js";
import { annotateRequest, requestContextOf } from "../http/requestContext.js";
import { sendAuthorizationResponse } from "./authorizationResponse.js";
import { consentPage } from "./consentPage.js";
import { browserCsrfToken } from "./csrf.js";
import { sendPage } from "./http.js";
import type { SignInFlow } from "./factorStep.js";
import type { ApplicationRecord } from "../shared/model.js";

export const CONSENT_PATH = "/login/oauth/consent";

/** The service's own scopes in plain words; a resource's scopes bring their own descriptions. */
export const SCOPE_WORDS: Readonly<Record<string, string>> = {
  openid: "Know who you are",
  profile: "See your name, user name and picture",
  email: "See your email address",
  address: "See your postal address",
  phone: "See your phone number",
  account: "See everything in your account",
  offline_access: "Keep this access while you are away",
};

/**
 * Consent for applications that need it (issue 43 §2; every registered
 * client): after sign-in, the user allows or denies the request on a page
 * of its own. Deny sends `access_denied` to the client; `prompt=none` gets
 * `consent_required` (OIDC Core §3.1.2.6), as no page may be shown.
 */
export class ConsentPages {
  constructor(
    private readonly domain: Domain,
    private readonly pages: Pick<SignInFlow, "pendingFromForm">,
    private readonly secure: boolean,
  ) {}

  /** Ask the signed-in user about `request`, or answer consent_required to prompt=none. */
  async ask(req: IncomingMessage, res: ServerResponse, app: ApplicationRecord, request: AuthorizeRequest, cookies: string[] = []): Promise<void> {
    if (request.prompt.includes("none")) {
      const error = new OAuthError("consent_required", "the user has not allowed this application");
      annotateRequest(requestContextOf(req), { oauthError: error.code });
      return sendAuthorizationResponse(res, errorResponse(request, error, this.domain.issuer), cookies);
    }
    const { csrfToken, cookies: csrfCookies } = browserCsrfToken(req, this.secure);
    const pending = await this.domain.pendingAuthorizations.create(request, csrfToken);
    const metadata = app.registration?.metadata ?? {};
    const text = (key: string) => (typeof metadata[key] === "string" ? (metadata[key] as string) : undefined);
    const resources = await Promise.all((request.resources ?? []).map((uri) => this.domain.resourceAdmin.get(uri)));
    const described = new Map(resources.flatMap((r) => r.scopes.map((s) => [s.name, s.description] as const)));
    sendPage(
      res,
      200,
      consentPage({
        appName: text("client_name") ?? app.name,
        logoUri: text("logo_uri"),
        clientUri: text("client_uri"),
        ...(app.registration?.metadataDocument ? { documentUrl: app.clientId } : {}),
        scopes: request.scopes.map((name) => ({ name, description: described.get(name) || SCOPE_WORDS[name] || "" })),
        resources: resources.map((r) => ({ uri: r.uri, name: r.name })),
        requestId: pending.id,
        csrfToken,
      }),
      [...cookies, ...csrfCookies],
    );
  }

  /** POST /login/oauth/consent: Allow or Deny, from this browser's signed-in user, once. */
  async decide(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { pending } = await this.pages.pendingFromForm(req, form);
    const signedIn = await this.domain.sessions.ofCookieHeader(req.headers.cookie);
    if (!signedIn) throw new OAuthError("login_required", "the sign-in ended before the decision: start again from the application");
    const decision = form.get("decision");
    if (decision !== "allow" && decision !== "deny") throw new OAuthError("invalid_request", "choose Allow or Deny");
    if (!(await this.domain.pendingAuthorizations.take(pending))) throw new OAuthError("invalid_request", "this request was already answered");
    const app = await this.domain.authorize.returnTo(pending.request);
    if (decision === "deny") {
      const error = new OAuthError("access_denied", "the user denied the request");
      annotateRequest(requestContextOf(req), { oauthError: error.code });
      return sendAuthorizationResponse(res, errorResponse(pending.request, error, this.domain.issuer));
    }
    // The session must still satisfy the application's second-factor policy (issue 46 §4), as at authorize.
    const proof = await this.domain.signInPolicy.sessionProof(app, pending.request, signedIn.session);
    if (!proof.ok) throw new OAuthError("login_required", "the sign-in no longer has the second factor this application needs: start again from the application");
    await this.domain.consents.allow(signedIn.user.id, app.clientId, pending.request);
    const response = await this.domain.authorize.respond(app, pending.request, signedIn.user, signedIn.session.authTime, proof.amr, signedIn.session);
    sendAuthorizationResponse(res, response);
  }
}
