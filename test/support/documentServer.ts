import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/** One answer the document server gives at a path. */
export interface ServedDocument {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON value, or raw text. */
  body: unknown;
}

/**
 * A client's web server for client ID metadata documents: answers each path
 * from `documents` and counts the requests per path, so a test sees how
 * often the service fetched.
 */
export interface DocumentServer {
  /** http(s)://127.0.0.1:PORT */
  origin: string;
  documents: Map<string, ServedDocument>;
  fetches(path: string): number;
  close(): Promise<void>;
}

/** Serve over http, or over https with `tls` (a certificate for 127.0.0.1). */
export async function startDocumentServer(tls?: { cert: string; key: string }): Promise<DocumentServer> {
  const documents = new Map<string, ServedDocument>();
  const counts = new Map<string, number>();
  const handler: http.RequestListener = (req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const served = documents.get(path);
    if (!served) return void res.writeHead(404).end();
    const body = typeof served.body === "string" ? served.body : JSON.stringify(served.body);
    res.writeHead(served.status ?? 200, { "content-type": "application/json", ...served.headers });
    res.end(body);
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    documents,
    fetches: (path) => counts.get(path) ?? 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A fresh self-signed P-256 certificate for 127.0.0.1 (by openssl), in `dir`; `certFile` can be NODE_EXTRA_CA_CERTS. */
export function loopbackCertificate(dir: string): { cert: string; key: string; certFile: string } {
  const certFile = join(dir, "loopback.crt");
  const keyFile = join(dir, "loopback.key");
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", keyFile, "-out", certFile],
    { stdio: "ignore" },
  );
  return { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8"), certFile };
}
