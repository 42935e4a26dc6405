import http from "node:http";
import type { AddressInfo } from "node:net";
import { build } from "esbuild";

/**
 * A single-page app's own web server on 127.0.0.1 and a port of its own (so
 * an origin of its own): `/` starts the sign-in, `/callback` finishes it, and
 * `/app.js` is test/e2e/spa/app.ts bundled for the browser by esbuild.
 */
export interface SpaServer {
  /** e.g. http://127.0.0.1:PORT, as the browser sends it in Origin. */
  origin: string;
  /** The redirect URI to register: `${origin}/callback`. */
  redirectUri: string;
  close(): Promise<void>;
}

let bundle: Promise<string> | undefined;

/** The page script, bundled once per test process. */
function pageScript(): Promise<string> {
  bundle ??= build({
    entryPoints: ["test/e2e/spa/app.ts"],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  }).then((result) => result.outputFiles[0]!.text);
  return bundle;
}

const escape = (value: string) => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

/** `issuer` is asked at each page load: the identity server may start after this one, knowing its origin. */
export async function startSpaServer(clientId: string, issuer: () => string): Promise<SpaServer> {
  const script = await pageScript();
  const page = () =>
    `<!doctype html><html><head><meta charset="utf-8"><title>SPA</title><script type="module" src="/app.js"></script></head>` +
    `<body data-issuer="${escape(issuer())}" data-client-id="${escape(clientId)}"><h1>SPA</h1><pre id="result"></pre></body></html>`;
  const server = http.createServer((req, res) => {
    const { pathname } = new URL(req.url ?? "/", "http://127.0.0.1");
    if (pathname === "/" || pathname === "/callback") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page());
    } else if (pathname === "/app.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(script);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    redirectUri: `${origin}/callback`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
