import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Domain } from "../domain/index.js";
import { escapeHtml } from "./pages.js";

/**
 * The admin console (console/ at the repository root): an HTML shell and the
 * bundle esbuild builds into dist/console. The shell shows the console's
 * frame and a loading message before any script runs (so never a blank
 * page, even while the script loads or when it cannot run); its script signs
 * in through this service (code + PKCE) and then draws the app over it.
 */
export const CONSOLE_PATH = "/admin/";
const CONSOLE_ALIAS = "/admin";
const SCRIPT_PATH = "/admin/console.js";
const STYLE_PATH = "/admin/console.css";
export const CONSOLE_PATHS = [CONSOLE_ALIAS, CONSOLE_PATH, SCRIPT_PATH, STYLE_PATH] as const;

/**
 * The login pages' policy with the console's needs: its own script, calls to
 * its own origin (the RPCs, the token endpoint), and provider favicons from
 * anywhere (their previews). Still no inline script or style.
 */
const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' https: http: data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

interface Asset {
  body: Buffer;
  version: string;
}

/**
 * The built bundle: next to this module's build (dist/src/web → dist/console),
 * or, run from source by tsx, in dist/console. Undefined until `npm run build`.
 */
function readAsset(file: string): Asset | undefined {
  for (const dir of ["../../console/", "../../dist/console/"]) {
    try {
      const body = readFileSync(new URL(dir + file, import.meta.url));
      return { body, version: createHash("sha256").update(body).digest("base64url").slice(0, 12) };
    } catch {
      // Not built here; try the next place.
    }
  }
  return undefined;
}

export interface ConsoleRoute {
  methods: readonly string[];
  serve(req: IncomingMessage, res: ServerResponse): void;
}

/** The console's routes for the web door: the shell at /admin/, its script and stylesheet. */
export function consoleRoutes(domain: Pick<Domain, "issuer" | "console">): Record<string, ConsoleRoute> {
  const script = readAsset("console.js");
  const style = readAsset("console.css");
  const { clientId, redirectUri, scope } = domain.console;
  // Settings travel as data attributes: the CSP allows no inline script to carry them.
  const shell = Buffer.from(`<!doctype html>
<html lang="en" data-issuer="${escapeHtml(domain.issuer)}" data-client-id="${escapeHtml(clientId)}" data-redirect-uri="${escapeHtml(redirectUri)}" data-scope="${escapeHtml(scope)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Identity console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${STYLE_PATH}?v=${style?.version ?? ""}">
<script type="module" src="${SCRIPT_PATH}?v=${script?.version ?? ""}"></script>
</head>
<body><div id="app"><header class="top"><span class="brand">Identity console</span></header>
<main id="main" class="loading"><p role="status">Loading the console…</p>
<noscript><p class="error">The console needs JavaScript: turn it on for this site and reload.</p></noscript></main></div></body>
</html>
`);

  const sendAsset = (req: IncomingMessage, res: ServerResponse, contentType: string, asset: Asset | undefined) => {
    if (!asset) return sendPlain(res, 503, "The console is not built: run `npm run build`.");
    // The shell names each asset by its content's hash, so that URL never changes its content;
    // any other (no hash, an old build's hash) is the current build and is checked again each time.
    const hashed = new URL(req.url ?? "", "http://x").searchParams.get("v") === asset.version;
    res.writeHead(200, {
      "content-type": contentType,
      "content-length": asset.body.length,
      "cache-control": hashed ? "public, max-age=31536000, immutable" : "no-cache",
      "x-content-type-options": "nosniff",
    });
    res.end(asset.body);
  };

  return {
    // The redirect URI ends with a slash; a bare /admin goes there first.
    [CONSOLE_ALIAS]: {
      methods: ["GET", "HEAD"],
      serve: (_req, res) => {
        res.writeHead(308, { location: CONSOLE_PATH, "content-length": 0, "cache-control": "no-store" });
        res.end();
      },
    },
    [CONSOLE_PATH]: {
      methods: ["GET", "HEAD"],
      serve: (_req, res) => {
        res.writeHead(200, {
          "content-security-policy": CONSOLE_CSP,
          "x-frame-options": "DENY",
          "referrer-policy": "no-referrer",
          "x-content-type-options": "nosniff",
          "cache-control": "no-store",
          "content-type": "text/html; charset=utf-8",
          "content-length": shell.length,
        });
        res.end(shell);
      },
    },
    [SCRIPT_PATH]: { methods: ["GET", "HEAD"], serve: (req, res) => sendAsset(req, res, "text/javascript; charset=utf-8", script) },
    [STYLE_PATH]: { methods: ["GET", "HEAD"], serve: (req, res) => sendAsset(req, res, "text/css; charset=utf-8", style) },
  };
}

function sendPlain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(text);
}
