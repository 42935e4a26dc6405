import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import type { UserRecord } from "../shared/model.js";
import { SCOPE_WORDS } from "./consent.js";
import { accountConsentsPage, accountSignInNeededPage } from "./accountConsentsPage.js";
import { browserCsrfToken, sentFromThisBrowser } from "./csrf.js";
import { sendPage } from "./http.js";
import type { SignInPages } from "./signIn.js";
import { ACCOUNT_PAGE_CLIENT_ID, ACCOUNT_PAGE_PATH, ownPageRequest } from "../oauth/ownPageSignIn.js";

export const ACCOUNT_CONSENTS_PATH = "/account/consents";


/**
 * `/account/consents` (issue 43 §2): the signed-in user sees the
 * applications they allowed, with what and where, and revokes one. A
 * revocation is a POST carrying this browser's CSRF token (double submit,
 * csrf.ts), from this browser's own session only; it ends that
 * application's refresh and access tokens for the user with the consent.
 */
export class AccountConsentPages {
  private readonly secure: boolean;

  constructor(
    private readonly domain: Domain,
    private readonly signIn: SignInPages,
  ) {
    this.secure = domain.issuer.startsWith("https:");
  }

  /** GET: the list; a browser without a session signs in first (the account page's sign-in) and comes back here. */
  async show(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const user = await this.signedIn(req);
    if (!user) return this.signIn.signInForPage(req, res, ownPageRequest(ACCOUNT_PAGE_CLIENT_ID, ACCOUNT_CONSENTS_PATH));
    await this.list(req, res, user);
  }

  /** POST: revoke the consent named by `client_id`. */
  async revoke(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    if (!sentFromThisBrowser(req, form.get("csrf_token"))) {
      throw new OAuthError("access_denied", "the form is missing its security token or was not sent from this browser", 403);
    }
    const user = await this.signedIn(req);
    // A form cannot be sent again after a sign-in: the page says to sign in and try again.
    if (!user) return sendPage(res, 401, accountSignInNeededPage(ACCOUNT_PAGE_PATH));
    let status: string;
    try {
      const revoked = await this.domain.userConsents.revokeOwn(user, form.get("client_id") ?? "");
      status = `${revoked.application} no longer has access to your account.`;
    } catch (err) {
      // Already revoked (another tab, a second click): the list says how things are now.
      if (!(err instanceof OAuthError) || err.code !== "not_found") throw err;
      status = "That application had no access left to revoke.";
    }
    await this.list(req, res, user, status);
  }

  private async list(req: IncomingMessage, res: ServerResponse, user: UserRecord, status?: string): Promise<void> {
    const { csrfToken, cookies } = browserCsrfToken(req, this.secure);
    const consents = await this.domain.userConsents.of(user);
    const applications = consents.map((c) => ({
      clientId: c.clientId,
      name: c.application,
      scopes: c.described.map((s) => ({ name: s.name, description: s.description || SCOPE_WORDS[s.name] || "" })),
      resources: c.resources,
      grantedAt: c.grantedAt,
    }));
    sendPage(res, 200, accountConsentsPage({ userName: user.displayName || user.name, csrfToken, applications, status }), cookies);
  }

  private async signedIn(req: IncomingMessage): Promise<UserRecord | undefined> {
    return (await this.domain.sessions.ofCookieHeader(req.headers.cookie))?.user;
  }
}
