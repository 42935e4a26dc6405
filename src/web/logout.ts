import type { IncomingMessage, ServerResponse } from "node:http";
import type { DoorAnswer } from "../http/door.js";
import type { Domain } from "../domain/index.js";
import type { EndSessionParams } from "../oauth/endSession.js";
import { OAuthError } from "../oauth/errors.js";
import { CLEARED_SESSION_COOKIE, cookieValue, SESSION_COOKIE } from "../oauth/sessions.js";
import { collectParams, readBody } from "../http/params.js";
import { sendError, sendJson } from "../http/answers.js";
import type { LogUnexpected } from "../http/requestContext.js";
import { browserCsrfToken, sentFromThisBrowser } from "./csrf.js";
import { redirect, sendPage } from "./http.js";
import { signedOutPage, signOutPage } from "./pages.js";

export const LOGOUT_PATH = "/api/logout";

export interface LogoutHandlerOptions {
  maxBodyBytes: number;
  log: LogUnexpected;
}

/**
 * Browser sign-out (OpenID Connect RP-Initiated Logout 1.0), GET or POST.
 * Hand-written because it answers with pages, redirects and cookies.
 *
 * With a valid `id_token_hint` for the session's own user, a relying party
 * the user signed in to asks: the session ends at once, the cookie is
 * cleared, and the browser goes to the registered post_logout_redirect_uri,
 * or gets Casdoor's `{"status":"ok"}`. Without one (or with another user's
 * ID token), any page could have sent the browser here, so the user is
 * asked first (§2): a confirmation page whose form posts back
 * with this browser's CSRF token, and only that post ends the session. The
 * redirect URI, `state` and `client_id` travel through the form. An invalid
 * request (a bad hint, an unregistered redirect) is refused before anything,
 * page or sign-out. Returns false for every other path.
 */
export function createLogoutHandler(domain: Domain, options: LogoutHandlerOptions) {
  const secure = domain.issuer.startsWith("https:");

  return function handleLogout(req: IncomingMessage, res: ServerResponse, url: URL): DoorAnswer {
    if (url.pathname !== LOGOUT_PATH) return false;
    if (req.method !== "GET" && req.method !== "POST") {
      sendJson(res, 405, { error: "invalid_request", error_description: "use GET or POST" }, { allow: "GET, POST" });
      return true;
    }
    return serve(req, res, url);
  };

  async function serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    try {
      const body = req.method === "POST" ? await readBody(req, options.maxBodyBytes) : "";
      const params = collectParams(url, req.headers["content-type"], body);
      const request: EndSessionParams = {
        idTokenHint: params.get("id_token_hint") ?? "",
        postLogoutRedirectUri: params.get("post_logout_redirect_uri") ?? "",
        state: params.get("state") ?? "",
        clientId: params.get("client_id") ?? "",
      };
      const sessionCookie = cookieValue(req.headers.cookie, SESSION_COOKIE);
      const { redirect: next, immediate, clientId } = await domain.signOut.check(request, sessionCookie);
      if (immediate) {
        await domain.sessions.end(sessionCookie);
        if (next) {
          res.writeHead(302, { location: next, "set-cookie": CLEARED_SESSION_COOKIE, "cache-control": "no-store" });
          res.end();
        } else {
          sendJson(res, 200, { status: "ok", msg: "", data: "" }, { "set-cookie": CLEARED_SESSION_COOKIE });
        }
        return;
      }
      const confirmation = req.method === "POST" ? params.get("csrf_token") : undefined;
      if (confirmation === undefined || confirmation === "") {
        const { csrfToken, cookies } = browserCsrfToken(req, secure);
        // The client a hint named travels as client_id, so the confirmation finds its redirect.
        sendPage(res, 200, signOutPage({ ...request, clientId, csrfToken }), cookies);
        return;
      }
      if (!sentFromThisBrowser(req, confirmation)) {
        throw new OAuthError("access_denied", "the sign-out form is missing its security token or was not sent from this browser", 403);
      }
      await domain.sessions.end(sessionCookie);
      if (next) redirect(res, next, [CLEARED_SESSION_COOKIE]);
      else sendPage(res, 200, signedOutPage(), [CLEARED_SESSION_COOKIE]);
    } catch (err) {
      sendError(res, err, options.log);
    }
  }
}
