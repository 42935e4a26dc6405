import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { LINK_REFUSALS } from "../accounts/emailLinks.js";
import type { AuthorizeRequest } from "../oauth/authorizeRequest.js";
import { OAuthError } from "../oauth/errors.js";
import { cookieValue } from "../oauth/sessions.js";
import { browserCsrfToken, CSRF_COOKIE, sentFromThisBrowser } from "./csrf.js";
import { sendPage } from "./http.js";
import { checkMailPage, forgotPage, noticePage, resetPage, signUpPage, verifyPage } from "./selfServicePages.js";
import type { SignInPages } from "./signIn.js";

/** The self-service pages' paths (issue 47), each GET (its form) and POST (the form sent). */
export const SELF_SERVICE_PATHS = { signUp: "/signup", forgot: "/login/forgot", verify: "/email/verify", reset: "/password/reset" } as const;

type Params = ReadonlyMap<string, string>;

/**
 * Sign-up, "Forgot password?", and the landings of mailed links. Every form
 * carries this browser's CSRF token (double submit, as the login form). A
 * mailed link's GET only shows a form: a mail scanner that fetches it spends
 * nothing; the POST takes the link, once.
 */
export class SelfServicePages {
  private readonly secure: boolean;

  constructor(
    private readonly domain: Domain,
    private readonly signIn: SignInPages,
  ) {
    this.secure = domain.issuer.startsWith("https:");
  }

  /** GET /signup?request=…: the form, for a pending sign-in of an application that offers sign-up. */
  async signUpForm(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    const csrfToken = cookieValue(req.headers.cookie, CSRF_COOKIE);
    const pending = await this.domain.pendingAuthorizations.findForBrowser(params.get("request"), csrfToken);
    const app = pending && (await this.domain.authorize.application(pending.request.clientId));
    if (!pending || !app || !csrfToken) throw new OAuthError("invalid_request", "this sign-in request is unknown or has expired: go back to the application and start again");
    if (!app.signup) throw new OAuthError("invalid_request", "this application does not offer sign-up", 404);
    sendPage(res, 200, signUpPage({ appName: app.name, requestId: pending.id, csrfToken, passwordMinLength: this.domain.selfService.passwordMinLength }));
  }

  /** POST /signup. */
  async signUp(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken } = await this.signIn.pendingFromForm(req, form);
    if (!app.signup) throw new OAuthError("invalid_request", "this application does not offer sign-up", 404);
    const input = {
      username: form.get("username") ?? "",
      email: form.get("email") ?? "",
      password: form.get("password") ?? "",
      passwordAgain: form.get("password_again") ?? "",
    };
    const result = await this.limited(res, () =>
      this.domain.selfService.signUp.submit(input, { clientAddress, clientId: app.clientId, continueRequest: JSON.stringify(pending.request) }),
    );
    if (!result) return;
    // A new account has a password and nothing else; an application whose policy asks for a factor gets it enrolled first.
    if (result.kind === "signed_up") return this.signIn.factorStep.afterFirstFactor(req, res, pending, app, result.user, ["pwd"], csrfToken);
    if (result.kind === "check_mail") return sendPage(res, 200, checkMailPage("signup"));
    const view = { appName: app.name, requestId: pending.id, csrfToken, username: input.username, email: input.email, errors: result.errors };
    sendPage(res, 400, signUpPage({ ...view, passwordMinLength: this.domain.selfService.passwordMinLength }));
  }

  /** GET /login/forgot[?request=…]: offered only with mail. */
  async forgotForm(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    this.requireMail();
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const pending = await this.domain.pendingAuthorizations.findForBrowser(params.get("request"), csrfToken);
    sendPage(res, 200, forgotPage({ csrfToken, requestId: pending?.id }), cookies);
  }

  /** POST /login/forgot: the same page whether or not an account matches (accounts/passwordReset.ts). */
  async forgot(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    this.requireMail();
    const csrfToken = this.formFromThisBrowser(req, form);
    const pending = await this.domain.pendingAuthorizations.findForBrowser(form.get("request"), csrfToken);
    const continueRequest = pending && JSON.stringify(pending.request);
    const asked = await this.limited(res, async () => {
      await this.domain.selfService.passwordReset.request(form.get("identifier") ?? "", { clientAddress, continueRequest });
      return true;
    });
    if (asked) sendPage(res, 200, checkMailPage("reset"));
  }

  /** GET /email/verify?token=…: a button, or why the link does nothing. */
  async verifyForm(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    const token = params.get("token");
    const checked = await this.domain.selfService.emailVerification.check(token);
    if (!checked.ok) return this.refused(res, checked.reason);
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    sendPage(res, 200, verifyPage({ token: token!, csrfToken }), cookies);
  }

  /** POST /email/verify: takes the link; then goes on with the sign-in it began with, if any. */
  async verify(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    this.formFromThisBrowser(req, form);
    const result = await this.domain.selfService.emailVerification.verify(form.get("token"), clientAddress);
    if (result.kind === "refused") return this.refused(res, result.reason);
    if (!result.verified) return sendPage(res, 400, noticePage("Email not verified", "The account's email address changed after this link was sent. Ask for a new link.", true));
    if (result.continueRequest) return this.signIn.resume(req, res, JSON.parse(result.continueRequest) as AuthorizeRequest);
    sendPage(res, 200, noticePage("Email verified", "Your email address is verified. You can close this page."));
  }

  /** GET /password/reset?token=…: the new-password form, or why the link does nothing. */
  async resetForm(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    const token = params.get("token");
    const checked = await this.domain.selfService.passwordReset.check(token);
    if (!checked.ok) return this.refused(res, checked.reason);
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const view = { token: token!, csrfToken, userName: checked.userName, passwordMinLength: this.domain.selfService.passwordMinLength };
    sendPage(res, 200, resetPage(view), cookies);
  }

  /** POST /password/reset: the new password, under the same rules as sign-up's; then sign in as usual. */
  async reset(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    const csrfToken = this.formFromThisBrowser(req, form);
    const token = form.get("token");
    const result = await this.domain.selfService.passwordReset.complete(token, form.get("password") ?? "", form.get("password_again") ?? "", clientAddress);
    if (result.kind === "refused") return this.refused(res, result.reason);
    if (result.kind === "invalid") {
      const view = { token: token!, csrfToken, userName: result.userName, errors: result.errors, passwordMinLength: this.domain.selfService.passwordMinLength };
      return sendPage(res, 400, resetPage(view));
    }
    if (result.continueRequest) return this.signIn.resume(req, res, JSON.parse(result.continueRequest) as AuthorizeRequest, result.userName);
    sendPage(res, 200, noticePage("Password changed", "Your password is changed and every session was signed out. Sign in with the new password."));
  }

  private requireMail(): void {
    if (!this.domain.selfService.mailConfigured) throw new OAuthError("invalid_request", "password reset by mail is not offered here", 404);
  }

  /** The form's CSRF token, after checking it against this browser's cookie (double submit). */
  private formFromThisBrowser(req: IncomingMessage, form: Params): string {
    const csrfToken = form.get("csrf_token");
    if (!sentFromThisBrowser(req, csrfToken)) throw new OAuthError("access_denied", "the form is missing its security token or was not sent from this browser", 403);
    return csrfToken;
  }

  private refused(res: ServerResponse, reason: keyof typeof LINK_REFUSALS): void {
    sendPage(res, 400, noticePage("This link does not work", LINK_REFUSALS[reason], true));
  }

  /** Runs `work`; a budget spent (429) is shown as its own page, and undefined returned. */
  private async limited<T>(res: ServerResponse, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof OAuthError) || err.status !== 429) throw err;
      sendPage(res, 429, noticePage("Too many requests", `${err.description[0]!.toUpperCase()}${err.description.slice(1)}.`, true));
      return undefined;
    }
  }
}
