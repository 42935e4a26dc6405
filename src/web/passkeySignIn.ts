import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { sendJson } from "../http/answers.js";
import type { SignInPages } from "./signIn.js";

/**
 * "Sign in with a passkey" on the login page (issue #46 §2): a discoverable
 * credential, no user name typed. The challenge is bound to the pending
 * authorize request, whose form (and CSRF token) both posts carry; a
 * verified passkey signs the user in with `mfa` (its key, and the user
 * verified), so no second step follows.
 */
export class PasskeySignIn {
  constructor(
    private readonly domain: Domain,
    private readonly pages: SignInPages,
  ) {}

  /** POST /login/passkey/options: the ceremony's options (JSON). */
  async options(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { pending } = await this.pages.pendingFromForm(req, form);
    sendJson(res, 200, await this.domain.passkeys.signInOptions(pending.id));
  }

  /** POST /login/passkey: the passkey's answer; the sign-in completes, or the login form says it did not. */
  async signIn(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken } = await this.pages.pendingFromForm(req, form);
    const signedIn = await this.domain.passkeys.signIn(form.get("response") ?? "", pending.id, clientAddress);
    if (!signedIn) {
      return this.pages.showLogin(res, 400, app, pending, { csrfToken, error: "That passkey could not sign you in. Try again, or use your password." });
    }
    await this.pages.completeSignIn(req, res, pending, signedIn.user, signedIn.proof);
  }
}
