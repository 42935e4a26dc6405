import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { errorResponse } from "../oauth/authorize.js";
import { OAuthError } from "../oauth/errors.js";
import { effectiveProvider } from "../federation/providerTypes/index.js";
import type { PendingAuthorization } from "../oauth/pendingAuthorizations.js";
import { cookieValue, SESSION_COOKIE, type SignInProof } from "../oauth/sessions.js";
import type { AuthorizeRequest } from "../oauth/authorizeRequest.js";
import { ACCOUNT_PAGE_CLIENT_ID } from "../oauth/ownPageSignIn.js";
import { FactorStepPages } from "./factorStep.js";
import { annotateRequest, requestContextOf } from "../http/requestContext.js";
import { browserCsrfToken, CSRF_COOKIE, sentFromThisBrowser } from "./csrf.js";
import { sendAuthorizationResponse } from "./authorizationResponse.js";
import { cookie, redirect, sendPage } from "./http.js";
import { errorPage, loginPage, type LoginView } from "./pages.js";
import { ConsentPages } from "./consent.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

export { CSRF_COOKIE } from "./csrf.js";

/** The browser half of sign-in: the authorize endpoint, the login form and the providers' round trip. */
export class SignInPages {
  private readonly secure: boolean;
  /** The second step after a first factor (web/factorStep.ts). */
  readonly factorStep: FactorStepPages;
  /** The consent step of applications that need it (web/consent.ts). */
  readonly consent: ConsentPages;

  constructor(private readonly domain: Domain) {
    this.secure = domain.issuer.startsWith("https:");
    this.factorStep = new FactorStepPages(domain, this);
    this.consent = new ConsentPages(domain, this, this.secure);
  }

  /** GET or POST /login/oauth/authorize (OIDC Core §3.1.2.1 allows both). */
  async authorize(req: IncomingMessage, res: ServerResponse, params: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { domain } = this;
    const validation = await domain.authorize.validate(params, clientAddress);
    if (!validation.ok) {
      // No trusted redirect_uri yet: tell the user, never redirect (no open redirect).
      if (!validation.target) return this.showError(res, validation.error);
      annotateRequest(requestContextOf(req), { oauthError: validation.error.code });
      return sendAuthorizationResponse(res, errorResponse(validation.target, validation.error, domain.issuer));
    }
    const { app, request } = validation;
    annotateRequest(requestContextOf(req), { clientId: app.clientId });
    await this.answer(req, res, app, request, request.loginHint);
  }

  /**
   * A checked request: answered at once for a browser whose sign-in is
   * enough (its second factor included), else the second step or the login
   * form. Every way into sign-in comes through here, so none skips the
   * application's policy.
   */
  private async answer(req: IncomingMessage, res: ServerResponse, app: ApplicationRecord, request: AuthorizeRequest, loginHint: string | undefined): Promise<void> {
    const { domain } = this;
    const signedIn = await domain.sessions.ofCookieHeader(req.headers.cookie);
    if (signedIn && domain.authorize.satisfiedBy(request, signedIn.session.authTime)) {
      const proof = await domain.signInPolicy.sessionProof(app, request, signedIn.session);
      // A passkey sign-in whose passkey was removed since proves nothing now: the user signs in again.
      if (proof.amr.length === 0) return this.askToSignIn(req, res, app, request, loginHint);
      if (!proof.ok) {
        // Signed in, but without the second factor this request needs: ask for it (step-up).
        return this.stepUp(req, res, app, request, signedIn.user, proof.amr);
      }
      // A sign-in for one of our pages (the account page, the device page) goes back to it.
      if (request.returnPath !== undefined) return redirect(res, request.returnPath);
      // Issue 43 §2: such an application never gets a code or token without the user's Allow, given now or remembered.
      if (app.consentRequired && !(await domain.consents.cover(signedIn.user.id, app.clientId, request))) return this.consent.ask(req, res, app, request);
      const response = await domain.authorize.respond(app, request, signedIn.user, signedIn.session.authTime, proof.amr, signedIn.session);
      return sendAuthorizationResponse(res, response);
    }
    await this.askToSignIn(req, res, app, request, loginHint);
  }

  /** The login form for a request no session answers; with prompt=none, login_required (OIDC Core §3.1.2.6). */
  private async askToSignIn(req: IncomingMessage, res: ServerResponse, app: ApplicationRecord, request: AuthorizeRequest, loginHint: string | undefined): Promise<void> {
    const { domain } = this;
    if (request.prompt.includes("none")) {
      const error = new OAuthError("login_required", "the user must sign in");
      annotateRequest(requestContextOf(req), { oauthError: error.code });
      return sendAuthorizationResponse(res, errorResponse(request, error, domain.issuer));
    }
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const pending = await domain.pendingAuthorizations.create(request, csrfToken);
    // OIDC Core §3.1.2.1 login_hint: the user name, prefilled (and escaped like every value on the page).
    await this.showLogin(res, 200, app, pending, { csrfToken, username: loginHint }, cookies);
  }

  /** A signed-in user asked for a (fresh) second factor: by the application's policy, or acr_values=mfa. */
  private async stepUp(req: IncomingMessage, res: ServerResponse, app: ApplicationRecord, request: AuthorizeRequest, user: UserRecord, amr: string[]): Promise<void> {
    if (request.prompt.includes("none")) {
      // OIDC Core §3.1.2.6: the user would have to interact.
      const error = new OAuthError("interaction_required", "the user must complete a second factor");
      annotateRequest(requestContextOf(req), { oauthError: error.code });
      return sendAuthorizationResponse(res, errorResponse(request, error, this.domain.issuer));
    }
    this.domain.signInPolicy.stepUpRequested(user, app, request);
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const pending = await this.domain.pendingAuthorizations.create(request, csrfToken);
    await this.factorStep.afterFirstFactor(req, res, pending, app, user, amr.filter((v) => v !== "mfa"), csrfToken, cookies);
  }

  /** POST /login: the username and password form, from `clientAddress` (for the brute-force policy). */
  async login(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken } = await this.pendingFromForm(req, form);
    const username = form.get("username") ?? "";
    let user: UserRecord;
    try {
      user = await this.domain.users.authenticate(username, form.get("password") ?? "", clientAddress);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      // The same words whether or not the user exists.
      return this.showLogin(res, 400, app, pending, { csrfToken, username, error: sentence(err.description) });
    }
    await this.factorStep.afterFirstFactor(req, res, pending, app, user, ["pwd"], csrfToken);
  }

  /**
   * POST /login/oauth/provider/<name>: a provider button. Sends the browser
   * to the provider's Auth URL with a state bound to this browser's CSRF
   * cookie and to the pending authorize request.
   */
  async provider(req: IncomingMessage, res: ServerResponse, name: string, form: ReadonlyMap<string, string>): Promise<void> {
    const { pending, app, csrfToken } = await this.pendingFromForm(req, form);
    if (!(await this.providersOf(app)).includes(name)) throw new OAuthError("invalid_request", "this application does not offer that provider", 404);
    const { authUrl } = await this.domain.federation.begin(name, csrfToken, pending.id);
    redirect(res, authUrl);
  }

  /**
   * GET /callback/<name> (`callback`), or the shared GET /callback
   * (undefined): the provider sends the browser back. The state must be one
   * this browser started with the provider whose callback this is; then the
   * provider's error is shown, or the code is exchanged, the account linked
   * and the pending authorize request finished as if the user had typed a
   * password. `clientAddress` goes on the sign-in's audit event.
   */
  async callback(req: IncomingMessage, res: ServerResponse, callback: string | undefined, params: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { federation, pendingAuthorizations } = this.domain;
    const csrfToken = cookieValue(req.headers.cookie, CSRF_COOKIE);
    const login = await federation.takeState(params.get("state"), { kind: "browser", csrfToken }, callback, clientAddress);
    const error = params.get("error");
    // Checked before calling the provider: nothing is created for a request that cannot finish.
    const pending = await pendingAuthorizations.findForBrowser(login.authorizationRequestId, csrfToken);
    if (error !== undefined) {
      const refusal = federation.refused(login, error, params.get("error_description"), clientAddress);
      // The provider did not sign the user in: the client hears access_denied, with its state, and the request ends.
      if (!pending || !(await pendingAuthorizations.take(pending))) throw refusal;
      annotateRequest(requestContextOf(req), { oauthError: refusal.code });
      return sendAuthorizationResponse(res, errorResponse(pending.request, refusal, this.domain.issuer));
    }
    if (!pending) throw new OAuthError("invalid_request", "this sign-in request is unknown or has expired");
    const { user } = await federation.complete(login, params.get("code"), params.get("iss"), clientAddress);
    const app = await this.domain.authorize.returnTo(pending.request);
    // RFC 8176 `fed`: a local second factor may still be asked for.
    await this.factorStep.afterFirstFactor(req, res, pending, app, user, ["fed"], csrfToken ?? "");
  }

  /**
   * Finish a pending authorize request for a user who has just signed in
   * (by password, or through a provider): start a session, issue the
   * response and send the browser to the client.
   */
  async completeSignIn(req: IncomingMessage, res: ServerResponse, pending: PendingAuthorization, user: UserRecord, proof: SignInProof): Promise<void> {
    const { domain } = this;
    if (!(await domain.pendingAuthorizations.take(pending))) {
      throw new OAuthError("invalid_request", "this sign-in was already completed");
    }
    // The application may have changed while the user was signing in.
    const app = await domain.authorize.returnTo(pending.request);
    // A fresh session id at every sign-in (no session fixation); the same user's sid goes on.
    const { cookie: sessionId, session } = await domain.sessions.create(user, proof, cookieValue(req.headers.cookie, SESSION_COOKIE));
    const sessionCookie = cookie(SESSION_COOKIE, sessionId, { secure: this.secure, maxAge: domain.sessions.ttlSeconds });
    if (pending.request.returnPath !== undefined) return redirect(res, pending.request.returnPath, [sessionCookie]);
    if (app.consentRequired && !(await domain.consents.cover(user.id, app.clientId, pending.request))) {
      return this.consent.ask(req, res, app, pending.request, [sessionCookie]);
    }
    const response = await domain.authorize.respond(app, pending.request, user, session.authTime, proof.amr, session);
    sendAuthorizationResponse(res, response, [sessionCookie]);
  }

  /**
   * Go on with an authorize request saved earlier (carried by a mailed
   * link, issue 47 §2) as if it had just arrived: its application and
   * redirect URI checked again, the login form shown unless this browser's
   * session already answers it. The mailed link itself signs nobody in.
   */
  async resume(req: IncomingMessage, res: ServerResponse, request: AuthorizeRequest, loginHint?: string): Promise<void> {
    const app = await this.domain.authorize.returnTo(request);
    await this.answer(req, res, app, request, loginHint ?? request.loginHint);
  }


  /**
   * The pending request a login-page form refers to, after checking the
   * form's CSRF token against the cookie (double submit) and the request's
   * binding to that token. Throws an error to show otherwise.
   */
  async pendingFromForm(
    req: IncomingMessage,
    form: ReadonlyMap<string, string>,
  ): Promise<{ pending: PendingAuthorization; app: ApplicationRecord; csrfToken: string }> {
    const csrfToken = form.get("csrf_token");
    if (!sentFromThisBrowser(req, csrfToken)) {
      throw new OAuthError("access_denied", "the sign-in form is missing its security token or was not sent from this browser", 403);
    }
    const pending = await this.domain.pendingAuthorizations.findForBrowser(form.get("request"), csrfToken);
    const app = pending && (await this.domain.authorize.application(pending.request.clientId));
    if (!pending || !app) throw new OAuthError("invalid_request", "this sign-in request is unknown or has expired");
    annotateRequest(requestContextOf(req), { clientId: app.clientId });
    return { pending, app, csrfToken };
  }

  /** The login form of a pending request (again, with an error, after a failed attempt). */
  async showLogin(
    res: ServerResponse,
    status: number,
    app: ApplicationRecord,
    pending: PendingAuthorization,
    form: Pick<LoginView, "csrfToken" | "username" | "error">,
    cookies: string[] = [],
  ): Promise<void> {
    const configured = await this.domain.providerAdmin.list();
    const offered = (await this.providersOf(app))
      .map((name) => configured.find((p) => p.name === name))
      .filter((p) => p !== undefined);
    const providers = offered.map((p) => ({ name: p.name, label: p.displayName || p.name, favicon: effectiveProvider(p).favicon }));
    // Issue 47: "Forgot password?" only with mail; "Create account" where the application offers sign-up.
    const links = {
      forgot: this.domain.selfService.mailConfigured ? `/login/forgot?request=${encodeURIComponent(pending.id)}` : undefined,
      signup: app.signup ? `/signup?request=${encodeURIComponent(pending.id)}` : undefined,
    };
    const passkeys = this.domain.passkeys.enabled;
    sendPage(res, status, loginPage({ ...form, appName: app.name, requestId: pending.id, providers, links, passkeys }), cookies, { passkeys });
  }

  /**
   * The providers an application's login page offers. The console's are a
   * setting read afresh at every sign-in (accounts/consoleProviders.ts), not
   * the application row cached by client id, so a change made on another
   * instance counts at once.
   */
  private async providersOf(app: ApplicationRecord): Promise<string[]> {
    if (app.clientId === ACCOUNT_PAGE_CLIENT_ID) return this.accountPageProviders();
    return app.clientId === this.domain.console.clientId ? this.domain.consoleProviders.offered() : app.providers;
  }

  /**
   * The account page offers every provider some application or the console
   * offers: whoever signs in through one of them reaches their account, and
   * no provider that no application offers becomes a way in.
   */
  private async accountPageProviders(): Promise<string[]> {
    const [apps, console] = await Promise.all([this.domain.applicationAdmin.list(), this.domain.consoleProviders.offered()]);
    return [...new Set([...apps.flatMap((a) => a.providers), ...console])].sort();
  }

  /**
   * Sign a browser in for one of our own pages (oauth/ownPageSignIn.ts):
   * back to the page at once when its session is enough, else the second
   * step or the login form, as for an application.
   */
  async signInForPage(req: IncomingMessage, res: ServerResponse, request: AuthorizeRequest): Promise<void> {
    await this.resume(req, res, request);
  }

  /** The page for an error that must not (or cannot) go back to the client. */
  showError(res: ServerResponse, error: OAuthError): void {
    annotateRequest(requestContextOf(res.req), { oauthError: error.code });
    // 503 tells the user (and any proxy) that trying again later may work; every other refusal is a 400.
    const status = error.status ?? (error.code === "temporarily_unavailable" ? 503 : 400);
    sendPage(res, status, errorPage("Sign-in failed", sentence(error.description), error.code));
  }
}

const sentence = (text: string) => (text ? `${text[0]!.toUpperCase()}${text.slice(1)}.` : text);
