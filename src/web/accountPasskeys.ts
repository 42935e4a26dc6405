import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { sendJson } from "../http/answers.js";
import { OAuthError } from "../oauth/errors.js";
import { browserCsrfToken, sentFromThisBrowser } from "./csrf.js";
import { redirect, sendPage } from "./http.js";
import { ACCOUNT_PASSKEY_PATHS, passkeyListPage, passkeyRecoveryCodesPage, removePasskeyPage, type PasskeyListView } from "./passkeyPages.js";
import type { UserRecord } from "../shared/model.js";
import type { SignInPages } from "./signIn.js";
import { ACCOUNT_PAGE_CLIENT_ID, ownPageRequest } from "../oauth/ownPageSignIn.js";

/** What a finished action says on the list it returns to (Post/Redirect/Get). */
const DONE: Record<string, string> = { added: "Passkey added.", renamed: "Passkey renamed.", removed: "Passkey removed." };

/**
 * /account/passkeys (issue #46 §5): a signed-in user's passkeys, behind the
 * browser session of the login page. Every POST carries this browser's CSRF
 * token (web/csrf.ts); a registration challenge is bound to the session.
 */
export class AccountPasskeyPages {
  private readonly secure: boolean;

  constructor(
    private readonly domain: Domain,
    private readonly signIn: SignInPages,
  ) {
    this.secure = domain.issuer.startsWith("https:");
  }

  /** GET /account/passkeys. */
  async show(req: IncomingMessage, res: ServerResponse, params: ReadonlyMap<string, string>): Promise<void> {
    const signedIn = await this.signedIn(req);
    // Signed out: the account page's sign-in, back to this page.
    if (!signedIn) return this.signIn.signInForPage(req, res, ownPageRequest(ACCOUNT_PAGE_CLIENT_ID, ACCOUNT_PASSKEY_PATHS.list));
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const done = params.get("done");
    await this.render(res, 200, signedIn.user, csrfToken, { status: done && Object.hasOwn(DONE, done) ? DONE[done] : undefined }, cookies);
  }

  /** POST /account/passkeys/options: registration options (JSON), the challenge bound to this session. */
  async options(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { user, session } = await this.poster(req, form);
    sendJson(res, 200, await this.domain.passkeys.registrationOptions(user, session.idHash));
  }

  /** POST /account/passkeys/add: the authenticator's answer; the recovery codes follow a first factor. */
  async add(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { user, session, csrfToken } = await this.poster(req, form);
    const codes = await this.domain.passkeys.register(user, form.get("response") ?? "", form.get("name") ?? "", session.idHash, clientAddress);
    if (!codes) return this.render(res, 400, user, csrfToken, { error: "The passkey was not added. Try again." });
    if (codes.length > 0) return sendPage(res, 200, passkeyRecoveryCodesPage(codes));
    redirect(res, `${ACCOUNT_PASSKEY_PATHS.list}?done=added`);
  }

  /** POST /account/passkeys/rename. */
  async rename(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { user, csrfToken } = await this.poster(req, form);
    if (!(await this.domain.passkeys.rename(user, form.get("factor") ?? "", form.get("name") ?? ""))) {
      return this.render(res, 400, user, csrfToken, { error: "Give the passkey a name." });
    }
    redirect(res, `${ACCOUNT_PASSKEY_PATHS.list}?done=renamed`);
  }

  /** POST /account/passkeys/remove: asks first, then removes with `confirm=yes`. */
  async remove(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { user, csrfToken } = await this.poster(req, form);
    const passkey = (await this.domain.passkeys.list(user.id)).find((p) => p.id === form.get("factor"));
    if (!passkey) throw new OAuthError("not_found", "you have no such passkey", 404);
    if (form.get("confirm") !== "yes") return sendPage(res, 200, removePasskeyPage({ csrfToken, passkey }));
    await this.domain.passkeys.remove(user, passkey.id);
    redirect(res, `${ACCOUNT_PASSKEY_PATHS.list}?done=removed`);
  }

  private signedIn(req: IncomingMessage) {
    return this.domain.sessions.ofCookieHeader(req.headers.cookie);
  }

  /** The signed-in user of a form posted from this browser's page. */
  private async poster(req: IncomingMessage, form: ReadonlyMap<string, string>) {
    const csrfToken = form.get("csrf_token");
    if (!sentFromThisBrowser(req, csrfToken)) throw new OAuthError("access_denied", "the form is missing its security token or was not sent from this browser", 403);
    const signedIn = await this.signedIn(req);
    if (!signedIn) throw new OAuthError("login_required", "sign in to manage your passkeys", 401);
    return { ...signedIn, csrfToken };
  }

  private async render(res: ServerResponse, status: number, user: UserRecord, csrfToken: string, notes: Pick<PasskeyListView, "status" | "error">, cookies: string[] = []): Promise<void> {
    const passkeys = (await this.domain.passkeys.list(user.id)).map((p) => ({ id: p.id, name: p.name, createdAt: p.createdAt }));
    const enabled = this.domain.passkeys.enabled;
    sendPage(res, status, passkeyListPage({ userName: user.name, csrfToken, passkeys, enabled, ...notes }), cookies, { passkeys: enabled });
  }
}
