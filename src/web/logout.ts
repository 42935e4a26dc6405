import type { IncomingMessage, ServerResponse } from "node:http";
import type { DoorAnswer } from "../http/door.js";
import type { Domain } from "../domain/index.js";
import { endSession } from "../oauth/endSession.js";
import { CLEARED_SESSION_COOKIE, cookieValue, SESSION_COOKIE } from "../oauth/sessions.js";
import { collectParams, readBody } from "../http/params.js";
import { sendError, sendJson } from "../http/answers.js";
import type { LogUnexpected } from "../http/requestContext.js";

export const LOGOUT_PATH = "/api/logout";

export interface LogoutHandlerOptions {
  maxBodyBytes: number;
  log: LogUnexpected;
}

/**
 * Browser sign-out (OpenID Connect RP-Initiated Logout 1.0), GET or POST.
 * Hand-written because it answers with a redirect and a cookie. It ends the
 * session, clears the cookie and either redirects to the registered
 * post_logout_redirect_uri or answers Casdoor's `{"status":"ok"}`.
 * Returns false for every other path.
 */
export function createLogoutHandler(domain: Domain, options: LogoutHandlerOptions) {
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
      const redirect = await endSession(domain, cookieValue(req.headers.cookie, SESSION_COOKIE), {
        idTokenHint: params.get("id_token_hint") ?? "",
        postLogoutRedirectUri: params.get("post_logout_redirect_uri") ?? "",
        state: params.get("state") ?? "",
        clientId: params.get("client_id") ?? "",
      });
      if (redirect) {
        res.writeHead(302, { location: redirect, "set-cookie": CLEARED_SESSION_COOKIE, "cache-control": "no-store" });
        res.end();
      } else {
        sendJson(res, 200, { status: "ok", msg: "", data: "" }, { "set-cookie": CLEARED_SESSION_COOKIE });
      }
    } catch (err) {
      sendError(res, err, options.log);
    }
  }
}
