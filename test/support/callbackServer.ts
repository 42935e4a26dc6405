import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A client application's redirect endpoint: records every request and
 * answers a small page. It also serves `/favicon.svg`, a logo tests can give
 * a provider.
 */
export interface CallbackServer {
  /** The redirect URI to register, e.g. http://127.0.0.1:PORT/callback. */
  url: string;
  /** Requests to /callback, oldest first (a fragment never reaches a server). */
  requests: URL[];
  close(): Promise<void>;
}

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><circle cx="10" cy="10" r="9" fill="#e0562f"/></svg>`;

export async function startCallbackServer(): Promise<CallbackServer> {
  const requests: URL[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/favicon.svg") {
      res.writeHead(200, { "content-type": "image/svg+xml" });
      res.end(FAVICON);
      return;
    }
    if (url.pathname !== "/callback") {
      // For example the browser's own /favicon.ico request.
      res.writeHead(404).end();
      return;
    }
    requests.push(url);
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>Client app</title><h1>Back at the client</h1>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
