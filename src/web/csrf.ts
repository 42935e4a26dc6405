import type { IncomingMessage } from "node:http";
import { constantTimeEqual, randomToken } from "../oauth/secrets.js";
import { cookieValue } from "../oauth/sessions.js";
import { cookie } from "./http.js";

/** The cookie holding this browser's CSRF token; the forms of our pages echo it (double submit). */
export const CSRF_COOKIE = "identity_csrf";
const CSRF_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * This browser's CSRF token for a form about to be shown: the one its cookie
 * holds, or a new one with the Set-Cookie that gives it.
 */
export function browserCsrfToken(req: IncomingMessage, secure: boolean): { csrfToken: string; cookies: string[] } {
  const existing = cookieValue(req.headers.cookie, CSRF_COOKIE);
  if (existing && CSRF_TOKEN.test(existing)) return { csrfToken: existing, cookies: [] };
  const csrfToken = randomToken();
  return { csrfToken, cookies: [cookie(CSRF_COOKIE, csrfToken, { secure })] };
}

/**
 * Whether a form was posted from a page of ours in this browser: its token is
 * the one in this browser's cookie, which another site can neither read nor
 * send (SameSite=Lax keeps it off cross-site posts too).
 */
export function sentFromThisBrowser(req: IncomingMessage, formToken: string | undefined): formToken is string {
  const cookieToken = cookieValue(req.headers.cookie, CSRF_COOKIE);
  return !!formToken && !!cookieToken && constantTimeEqual(formToken, cookieToken);
}
