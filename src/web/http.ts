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
 * `formTargets` lists the origins a form may end up at after redirects
 * (Chromium applies form-action to them).
 */
function pageHeaders(formTargets: readonly string[]): Record<string, string> {
  const formAction = ["'self'", ...new Set(formTargets)].join(" ");
  return {
    "content-security-policy":
      `default-src 'none'; style-src 'self'; img-src 'self' https: http: data:; form-action ${formAction}; ` +
      "frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
  };
}

export interface PageOptions {
  cookies?: string[];
  formTargets?: readonly string[];
}

export function sendPage(res: ServerResponse, status: number, html: string, options: PageOptions = {}): void {
  res.writeHead(status, {
    ...pageHeaders(options.formTargets ?? []),
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(html),
    ...(options.cookies?.length ? { "set-cookie": options.cookies } : {}),
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
