import type { IncomingMessage, ServerResponse } from "node:http";
import { cors as connectCors } from "@connectrpc/connect";
import corsMiddleware from "cors";

/**
 * Browsers on other origins (CORS): a single-page app's fetch of the token
 * endpoint, or a Connect / gRPC-Web client calling an RPC, from an origin
 * some application lists in `allowedOrigins`.
 *
 * - Only the paths given are opened; every other path (the login page,
 *   introspection, the probes) answers as it would without an Origin.
 * - An allowed origin gets itself back in Access-Control-Allow-Origin (never
 *   `*`), with Vary: Origin; a preflight from it is answered here (204) with
 *   the methods and the Connect and gRPC-Web headers.
 * - An origin no application lists gets no CORS header at all, so the
 *   browser keeps the response from the script; its preflight gets a 204
 *   without allow headers, so the request itself is never sent.
 * - No credentials mode: Access-Control-Allow-Credentials is never sent.
 *   Tokens travel in the Authorization header or the body, not in cookies,
 *   and a browser refuses a credentialed cross-origin request without it, so
 *   the session cookie never rides along.
 *
 * The header writing is the `cors` package's; the header lists start from
 * Connect's own (`cors` of @connectrpc/connect).
 */
export interface CrossOriginOptions {
  /** The exact pathnames browsers on other origins may call. */
  paths: Iterable<string>;
  /** Whether some application allows the origin: a cached set, so mostly answered at once. */
  allows(origin: string): boolean | Promise<boolean>;
  /** A lookup that failed: the request goes on as if the origin were not allowed. */
  onLookupError?(err: unknown, req: IncomingMessage): void;
}

/** Request headers a cross-origin script may send besides the CORS-safelisted ones. */
const CORS_ALLOWED_HEADERS: readonly string[] = [...connectCors.allowedHeaders, "Authorization", "X-Request-Id", "DPoP"];

/** Response headers a cross-origin script may read besides the CORS-safelisted ones. */
const CORS_EXPOSED_HEADERS: readonly string[] = [
  ...connectCors.exposedHeaders,
  "Connect-Protocol-Version",
  "WWW-Authenticate",
  "Retry-After",
  "X-Request-Id",
  "X-OAuth-Error",
  // RFC 9449 §8: a browser client reads the nonce to retry with.
  "DPoP-Nonce",
];

const CORS_ALLOWED_METHODS: readonly string[] = connectCors.allowedMethods;

/** How long a browser may reuse a preflight answer (s); Chromium caps it at 7200. */
const CORS_MAX_AGE_SECONDS = 600;

type RequestHandler = (req: IncomingMessage, res: ServerResponse, url: URL | undefined) => void;

/** `handler` with CORS in front of it on the given paths. */
export function withCrossOrigin(options: CrossOriginOptions, handler: RequestHandler): RequestHandler {
  const paths = new Set(options.paths);
  // `origin: true` echoes the request's Origin; it is only reached for an allowed one.
  const allowed = corsMiddleware({
    origin: true,
    methods: [...CORS_ALLOWED_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_SECONDS,
    credentials: false,
    preflightContinue: false,
    optionsSuccessStatus: 204,
  });

  return (req, res, url) => {
    if (!url || !paths.has(url.pathname)) return handler(req, res, url);
    const origin = req.headers.origin;
    if (origin === undefined) {
      // The answer still depends on Origin: a cache must not give it to a browser that sends one.
      varyOnOrigin(res);
      return handler(req, res, url);
    }
    const answer = (ok: boolean) => {
      if (ok) {
        allowed(req, res, () => handler(req, res, url));
        return;
      }
      varyOnOrigin(res);
      if (req.method === "OPTIONS") {
        res.statusCode = 204;
        res.setHeader("content-length", "0");
        res.end();
        return;
      }
      handler(req, res, url);
    };
    let verdict: boolean | Promise<boolean>;
    try {
      verdict = options.allows(origin);
    } catch (err) {
      verdict = Promise.reject(err);
    }
    if (typeof verdict === "boolean") return answer(verdict);
    verdict.then(answer, (err: unknown) => {
      options.onLookupError?.(err, req);
      answer(false);
    });
  };
}

function varyOnOrigin(res: ServerResponse): void {
  const vary = res.getHeader("vary");
  if (vary === undefined) res.setHeader("vary", "Origin");
  else if (!/(^|,)\s*origin\s*(,|$)/i.test(String(vary))) res.setHeader("vary", `${String(vary)}, Origin`);
}
