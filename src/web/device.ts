import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { DEVICE_PAGE_PATH, displayUserCode, type PendingDevice } from "../oauth/deviceAuthorization.js";
import type { AuthorizeRequest } from "../oauth/authorizeRequest.js";
import { ownPageRequest } from "../oauth/ownPageSignIn.js";
import type { SignInPages } from "./signIn.js";
import { OAuthError } from "../oauth/errors.js";
import { cookieValue, SESSION_COOKIE } from "../oauth/sessions.js";
import type { UserRecord } from "../shared/model.js";
import { browserCsrfToken, sentFromThisBrowser } from "./csrf.js";
import { deviceCodePage, deviceConsentPage, deviceDonePage } from "./devicePages.js";
import { cookie, sendPage } from "./http.js";

const sentence = (text: string) => (text ? `${text[0]!.toUpperCase()}${text.slice(1)}.` : text);

/**
 * The verification page of the device authorization grant (RFC 8628 §3.3):
 * the user types the code (or follows verification_uri_complete), signs in
 * if this browser has no session, sees the application and its scopes, and
 * allows or denies. Every code typed, right or wrong, is looked up under the
 * login form's per-address budget (oauth/deviceAuthorization.ts).
 */
export class DevicePages {
  private readonly secure: boolean;

  constructor(
    private readonly domain: Domain,
    private readonly signIn: SignInPages,
  ) {
    this.secure = domain.issuer.startsWith("https:");
  }

  /** GET /device[?user_code=...]. */
  async show(req: IncomingMessage, res: ServerResponse, params: ReadonlyMap<string, string>): Promise<void> {
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const signedIn = await this.signedIn(req);
    sendPage(res, 200, deviceCodePage({ csrfToken, userCode: params.get("user_code") ?? "", signIn: !signedIn }), cookies);
  }

  /**
   * POST /device: the code (and a sign-in), or the decision. The sign-in
   * meets the application's second-factor policy (issue #46 §4) as at its
   * login page: a user with a factor, or any user of an `mfa: required`
   * application, goes through the factor step (web/factorStep.ts), which
   * ends back here with a session that proved it.
   */
  async submit(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const csrfToken = form.get("csrf_token");
    if (!sentFromThisBrowser(req, csrfToken)) {
      throw new OAuthError("access_denied", "the form is missing its security token or was not sent from this browser", 403);
    }
    const typed = form.get("user_code") ?? "";
    let signedIn = await this.signedIn(req);
    const again = (error: unknown) => {
      if (!(error instanceof OAuthError)) throw error;
      sendPage(res, 400, deviceCodePage({ csrfToken, userCode: typed, signIn: !signedIn, error: sentence(error.description) }));
    };
    let pending: PendingDevice;
    try {
      pending = await this.domain.devices.lookup(typed, clientAddress);
    } catch (err) {
      return again(err);
    }
    // The policy's request: this application's, ending back at this page with the code filled in.
    const request = ownPageRequest(pending.app.clientId, `${DEVICE_PAGE_PATH}?user_code=${encodeURIComponent(displayUserCode(pending.record.userCode))}`);
    const proof = signedIn && (await this.domain.signInPolicy.sessionProof(pending.app, request, signedIn.session));
    if (form.get("step") === "decide") {
      if (!signedIn || !proof || !proof.ok) return again(new OAuthError("login_required", "sign in first"));
      const allow = form.get("decision") === "allow";
      await this.domain.devices.decide(pending.record.userCode, signedIn.user, signedIn.session.authTime, allow, proof.amr);
      return sendPage(res, 200, deviceDonePage(allow));
    }
    if (signedIn && proof && !proof.ok) {
      // Signed in, without the second factor this application needs: ask for it (step-up).
      this.domain.signInPolicy.stepUpRequested(signedIn.user, pending.app, request, clientAddress);
      return this.factorStep(req, res, request, pending, signedIn.user, proof.amr.filter((v) => v !== "mfa"), csrfToken);
    }
    const cookies: string[] = [];
    if (!signedIn) {
      let user: UserRecord;
      try {
        user = await this.domain.users.authenticate(form.get("username") ?? "", form.get("password") ?? "", clientAddress, pending.app.clientId);
      } catch (err) {
        return again(err);
      }
      if ((await this.domain.signInPolicy.next(pending.app, request, user.id)) !== "done") return this.factorStep(req, res, request, pending, user, ["pwd"], csrfToken);
      // A fresh session id at every sign-in (no session fixation).
      const { cookie: sessionId, session } = await this.domain.sessions.create(user, undefined, cookieValue(req.headers.cookie, SESSION_COOKIE));
      cookies.push(cookie(SESSION_COOKIE, sessionId, { secure: this.secure, maxAge: this.domain.sessions.ttlSeconds }));
      signedIn = { user, session };
    }
    const view = {
      csrfToken,
      userCode: displayUserCode(pending.record.userCode),
      appName: pending.app.name,
      scopes: pending.record.scope.split(" "),
      userName: signedIn.user.displayName || signedIn.user.name,
    };
    sendPage(res, 200, deviceConsentPage(view), cookies);
  }

  /** The second step of the sign-in (web/factorStep.ts), on a pending request that comes back to this page. */
  private async factorStep(req: IncomingMessage, res: ServerResponse, request: AuthorizeRequest, pending: PendingDevice, user: UserRecord, amr: string[], csrfToken: string): Promise<void> {
    const signIn = await this.domain.pendingAuthorizations.create(request, csrfToken);
    await this.signIn.factorStep.afterFirstFactor(req, res, signIn, pending.app, user, amr, csrfToken);
  }

  private signedIn(req: IncomingMessage) {
    return this.domain.sessions.ofCookieHeader(req.headers.cookie);
  }
}
