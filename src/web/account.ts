import type { IncomingMessage, ServerResponse } from "node:http";
import QRCode from "qrcode";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import { ACCOUNT_PAGE_CLIENT_ID, ACCOUNT_PAGE_PATH, ownPageRequest } from "../oauth/ownPageSignIn.js";
import type { UserRecord } from "../shared/model.js";
import { accountEnrolPage, accountPage, accountRecoveryCodesPage, removeLastFactorPage, type AccountView } from "./accountPages.js";
import { browserCsrfToken, sentFromThisBrowser } from "./csrf.js";
import { redirect, sendPage } from "./http.js";
import type { SignInPages } from "./signIn.js";

/** The account page's paths (issue #46 §5): the page (GET), and one POST per action. */
export const ACCOUNT_PATHS = {
  page: ACCOUNT_PAGE_PATH,
  password: "/account/password",
  totp: "/account/totp",
  totpConfirm: "/account/totp/confirm",
  removeFactor: "/account/factor/remove",
  recovery: "/account/recovery",
  endSession: "/account/sessions/end",
  unlink: "/account/links/unlink",
} as const;

type Params = ReadonlyMap<string, string>;

/** What each action's redirect says on the page (Post/Redirect/Get: a reload repeats nothing). */
const NOTICES: Record<string, string> = {
  password: "Your password is changed. Your other sessions were signed out.",
  totp: "The one-time code is turned on.",
  removed: "The factor is removed.",
  session: "The session is ended.",
  unlinked: "The provider is unlinked.",
};

interface SignedIn {
  user: UserRecord;
  session: NonNullable<Awaited<ReturnType<Domain["sessions"]["find"]>>>["session"];
  csrfToken: string;
}

/**
 * The account page: behind the browser's sign-in (the login form and its
 * second step, oauth/ownPageSignIn.ts), every action scoped to the signed-in
 * user, every form CSRF-protected (double submit), no script. A secret or
 * recovery code is shown on a page of its own, once; the page after it no
 * longer holds it.
 */
export class AccountPages {
  private readonly secure: boolean;

  constructor(
    private readonly domain: Domain,
    private readonly signIn: SignInPages,
  ) {
    this.secure = domain.issuer.startsWith("https:");
  }

  /** GET /account: the page, or sign-in first and back. */
  async show(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    const found = await this.domain.sessions.ofCookieHeader(req.headers.cookie);
    if (!found) return this.signIn.signInForPage(req, res, ownPageRequest(ACCOUNT_PAGE_CLIENT_ID, ACCOUNT_PAGE_PATH));
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const notice = NOTICES[params.get("done") ?? ""];
    sendPage(res, 200, accountPage(await this.view({ ...found, csrfToken }, { notice })), cookies);
  }

  /** POST /account/password. */
  async changePassword(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    const me = await this.signedIn(req, form);
    const result = await this.domain.selfService.passwordChange.change(me.user, form.get("current_password") ?? "", form.get("password") ?? "", form.get("password_again") ?? "", {
      keepSession: me.session.idHash,
      clientAddress,
    });
    if (result.kind === "changed") return redirect(res, `${ACCOUNT_PATHS.page}?done=password`);
    sendPage(res, 400, accountPage(await this.view(me, { passwordErrors: result.errors })));
  }

  /** POST /account/totp: a new secret, on a page of its own. */
  async beginTotp(req: IncomingMessage, res: ServerResponse, form: Params): Promise<void> {
    const me = await this.signedIn(req, form);
    const enrolment = await this.domain.secondFactors.beginTotp(me.user);
    await this.showEnrolment(res, 200, me.csrfToken, enrolment);
  }

  /** POST /account/totp/confirm: the first code; the recovery codes for a first factor. */
  async confirmTotp(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    const me = await this.signedIn(req, form);
    const factorId = form.get("factor") ?? "";
    let codes: string[] | undefined;
    let error = "That code is not valid. Try the next code your app shows.";
    try {
      codes = await this.domain.secondFactors.confirmTotp(me.user, factorId, form.get("code") ?? "", clientAddress);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      error = sentence(err.description);
    }
    if (!codes) {
      const enrolment = await this.domain.secondFactors.resumeTotp(me.user, factorId);
      if (!enrolment) throw new OAuthError("invalid_request", "this enrolment is unknown or was completed");
      return this.showEnrolment(res, 400, me.csrfToken, enrolment, error);
    }
    if (codes.length === 0) return redirect(res, `${ACCOUNT_PATHS.page}?done=totp`);
    sendPage(res, 200, accountRecoveryCodesPage(codes));
  }

  /** POST /account/recovery: a new set, shown once; the old set is void. */
  async newRecoveryCodes(req: IncomingMessage, res: ServerResponse, form: Params): Promise<void> {
    const me = await this.signedIn(req, form);
    if (!(await this.domain.secondFactors.has(me.user.id))) throw new OAuthError("invalid_request", "recovery codes come with a second factor: set one up first");
    sendPage(res, 200, accountRecoveryCodesPage(await this.domain.secondFactors.newRecoveryCodes(me.user)));
  }

  /** POST /account/factor/remove: the last factor of a user of `required` applications only with confirm=yes. */
  async removeFactor(req: IncomingMessage, res: ServerResponse, form: Params): Promise<void> {
    const me = await this.signedIn(req, form);
    const factorId = form.get("factor") ?? "";
    const removal = await this.domain.ownAccount.removeFactor(me.user, factorId, form.get("confirm") === "yes");
    if (removal.kind === "not_found") return sendPage(res, 404, accountPage(await this.view(me, { error: "That factor is not yours, or was already removed." })));
    if (removal.kind === "confirm") {
      return sendPage(res, 200, removeLastFactorPage({ csrfToken: me.csrfToken, factorId, factorName: removal.factor.name, applications: removal.applications }));
    }
    redirect(res, `${ACCOUNT_PATHS.page}?done=removed`);
  }

  /** POST /account/sessions/end: one of the user's other sessions (this one ends by signing out). */
  async endSession(req: IncomingMessage, res: ServerResponse, form: Params, clientAddress?: string): Promise<void> {
    const me = await this.signedIn(req, form);
    if (!(await this.domain.ownAccount.endSession(me.user, form.get("session") ?? "", clientAddress))) {
      return sendPage(res, 404, accountPage(await this.view(me, { error: "That session has already ended." })));
    }
    redirect(res, `${ACCOUNT_PATHS.page}?done=session`);
  }

  /** POST /account/links/unlink: refused for the last way a user without a password or passkey signs in. */
  async unlink(req: IncomingMessage, res: ServerResponse, form: Params): Promise<void> {
    const me = await this.signedIn(req, form);
    const outcome = await this.domain.ownAccount.unlink(me.user, form.get("provider") ?? "", form.get("id_type") ?? "", form.get("external_id") ?? "");
    if (outcome === "unlinked") return redirect(res, `${ACCOUNT_PATHS.page}?done=unlinked`);
    const error = outcome === "last_sign_in" ? "This provider is the only way you sign in: it stays linked." : "That provider is not linked to your account.";
    sendPage(res, outcome === "last_sign_in" ? 409 : 404, accountPage(await this.view(me, { error })));
  }

  /** The signed-in user of a form: its CSRF token must be this browser's, and the browser signed in. */
  private async signedIn(req: IncomingMessage, form: Params): Promise<SignedIn> {
    const csrfToken = form.get("csrf_token");
    if (!sentFromThisBrowser(req, csrfToken)) throw new OAuthError("access_denied", "the form is missing its security token or was not sent from this browser", 403);
    const found = await this.domain.sessions.ofCookieHeader(req.headers.cookie);
    if (!found) throw new OAuthError("login_required", "your session has ended: open your account page again to sign in", 401);
    return { ...found, csrfToken };
  }

  private async view(me: SignedIn, extra: Pick<AccountView, "notice" | "passwordErrors" | "error">): Promise<AccountView> {
    const { domain } = this;
    const [factors, recoveryCodesLeft, sessions, links] = await Promise.all([
      domain.secondFactors.list(me.user.id),
      domain.secondFactors.recoveryCodesLeft(me.user.id),
      domain.ownAccount.sessions(me.user, me.session.idHash),
      domain.ownAccount.links(me.user),
    ]);
    return {
      csrfToken: me.csrfToken,
      userName: me.user.name,
      displayName: me.user.displayName,
      hasPassword: me.user.passwordHash !== null && me.user.passwordHash !== "",
      passwordMinLength: domain.selfService.passwordMinLength,
      factors: factors.map((f) => ({ id: f.id, type: f.type, name: f.name, createdAt: f.createdAt })),
      recoveryCodesLeft,
      sessions,
      links: links.map((l) => ({ provider: l.provider, externalIdType: l.externalIdType, externalId: l.externalId, username: l.username })),
      ...extra,
    };
  }

  private async showEnrolment(res: ServerResponse, status: number, csrfToken: string, enrolment: { factorId: string; uri: string; secret: string }, error?: string): Promise<void> {
    // A PNG in a data: URI, which the pages' CSP allows as an image: no script draws it.
    const qrDataUrl = await QRCode.toDataURL(enrolment.uri, { margin: 1, width: 240 });
    sendPage(res, status, accountEnrolPage({ csrfToken, ...enrolment, qrDataUrl, ...(error ? { error } : {}) }));
  }
}

const sentence = (text: string) => (text ? `${text[0]!.toUpperCase()}${text.slice(1)}.` : text);
