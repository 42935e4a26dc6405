import type { ServerResponse } from "node:http";

export interface CookieOptions {
  secure: boolean;
  /** Seconds; absent makes a browser-session cookie. */
  maxAge?: number;
}

/** A Set-Cookie value for the whole site: always HttpOnly and SameSite=Lax. */
export function cookie(name: string, value: string, options: CookieOptions): string {
  return [
    `${name}=${value}`,
    "Path=/",
    ...(options.maxAge !== undefined ? [`Max-Age=${options.maxAge}`] : []),
    "HttpOnly",
    "SameSite=Lax",
    ...(options.secure ? ["Secure"] : []),
  ].join("; ");
}

/**
 * Headers of every page: no script at all, styles only from our origin, no
 * framing (clickjacking), no Referer leaking codes or request ids, no caching.
 *
 * No `form-action`: Chromium applies it to every redirect after a form
 * submission, and after the login form the chain goes on wherever the client
 * sends the browser next. A downstream service that uses this one as its
 * login provider redirects again, to its own client, which no list here
 * could name. Without script and with every value escaped, there is no
 * injected form for it to stop.
 */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' https: http: data:; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
};

/**
 * The one relaxation, for the form_post response page only: scripts from our
 * own origin (the one that submits the form), still none inline.
 */
const OWN_SCRIPT_CSP = PAGE_HEADERS["content-security-policy"]!.replace("default-src 'none';", "default-src 'none'; script-src 'self';");
/** Pages with passkey forms: our scripts, which also fetch the ceremony's options from our origin. */
const PASSKEY_CSP = OWN_SCRIPT_CSP.replace("script-src 'self';", "script-src 'self'; connect-src 'self';");

export interface PageOptions {
  /** Allow `<script src>` from this origin (never inline script). */
  ownScripts?: boolean;
  /** Our scripts, and their requests to our origin (the passkey forms, web/passkeyAssets.ts). */
  passkeys?: boolean;
}

export function sendPage(res: ServerResponse, status: number, html: string, cookies: string[] = [], options: PageOptions = {}): void {
  res.writeHead(status, {
    ...PAGE_HEADERS,
    ...(options.ownScripts ? { "content-security-policy": OWN_SCRIPT_CSP } : {}),
    ...(options.passkeys ? { "content-security-policy": PASSKEY_CSP } : {}),
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(html),
    ...(cookies.length ? { "set-cookie": cookies } : {}),
  });
  res.end(html);
}

/** 303 See Other (RFC 9700 §4.12: never 307 after a form POST). */
export function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  res.writeHead(303, {
    location,
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "content-length": 0,
    ...(cookies.length ? { "set-cookie": cookies } : {}),
  });
  res.end();
}
