import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { errorFields, type Logger } from "../shared/log.js";
import type { Readiness } from "../domain/index.js";
import { sendJson } from "../http/answers.js";
import { constantTimeEqual } from "../oauth/secrets.js";
import type { PromMetrics } from "./metrics.js";

/** The operational paths, hand-written: they are for probes and scrapers, not OAuth clients. */
export const OPS_PATHS = ["/healthz", "/readyz", "/metrics"] as const;

/** How long /readyz waits for the database before calling it unready. */
const DATABASE_CHECK_MS = 2000;

export interface OpsEndpointsOptions {
  readiness: Readiness;
  logger: Logger;
  /** Served at /metrics when given (metrics on the main port). */
  metrics?: PromMetrics;
  /** The bearer token /metrics requires, if any (--metrics-token). */
  metricsToken?: string;
}

/** Serves /healthz, /readyz and /metrics; returns false for any other path. */
export function opsEndpoints(options: OpsEndpointsOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/healthz" && path !== "/readyz" && !(path === "/metrics" && options.metrics)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendJson(res, 405, { error: "invalid_request", error_description: "use GET" }, { allow: "GET, HEAD" });
      return true;
    }
    if (path === "/healthz") sendJson(res, 200, { status: "ok" });
    else if (path === "/readyz") {
      readiness(options).then(
        ({ ready, checks }) => sendJson(res, ready ? 200 : 503, { status: ready ? "ready" : "not_ready", checks }),
        (err) => failed(res, options.logger, err),
      );
    } else if (scraperAllowed(req, res, options.metricsToken)) serveMetrics(options.metrics!, res, options.logger);
    return true;
  };
}

async function readiness(options: OpsEndpointsOptions): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const checks: Record<string, string> = {
    database: await databaseCheck(options),
    signing_keys: options.readiness.signingKeyLoaded() ? "ok" : "none active",
  };
  return { ready: Object.values(checks).every((c) => c === "ok"), checks };
}

async function databaseCheck({ readiness, logger }: OpsEndpointsOptions): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("timeout"), DATABASE_CHECK_MS)));
  const query = readiness.database().then(
    () => "ok",
    (err: unknown) => {
      logger.warn("readiness: database check failed", errorFields(err));
      return "unreachable";
    },
  );
  try {
    return await Promise.race([query, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether the caller may read /metrics: always without --metrics-token, else
 * only with that bearer token (compared in constant time). Otherwise it is
 * answered 401 with the Bearer challenge (RFC 6750 §3), Prometheus's
 * `authorization` setting being the way to send it.
 */
function scraperAllowed(req: IncomingMessage, res: ServerResponse, token: string | undefined): boolean {
  if (token === undefined) return true;
  const sent = req.headers.authorization;
  if (sent !== undefined && /^Bearer /i.test(sent) && constantTimeEqual(sent.slice(7).trim(), token)) return true;
  sendJson(res, 401, { error: "invalid_token", error_description: "/metrics needs the bearer token set by --metrics-token" }, {
    "www-authenticate": 'Bearer realm="metrics"',
  });
  return false;
}

function serveMetrics(metrics: PromMetrics, res: ServerResponse, logger: Logger): void {
  metrics.render().then(({ contentType, body }) => {
    res.writeHead(200, { "content-type": contentType, "content-length": Buffer.byteLength(body), "cache-control": "no-store" });
    res.end(body);
  }, (err) => failed(res, logger, err));
}

function failed(res: ServerResponse, logger: Logger, err: unknown): void {
  logger.error("ops endpoint failed", errorFields(err));
  if (!res.headersSent) sendJson(res, 500, { status: "error" });
}

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/**
 * /metrics on a port of its own, on `host` (--metrics-host, else --host), so
 * it can stay off the public network; with `token`, behind it as well.
 */
export async function listenMetrics(metrics: PromMetrics, host: string, port: number, logger: Logger, token?: string): Promise<MetricsListener> {
  const server = http.createServer((req, res) => {
    if ((req.url ?? "").split("?")[0] === "/metrics" && (req.method === "GET" || req.method === "HEAD")) {
      if (scraperAllowed(req, res, token)) serveMetrics(metrics, res, logger);
    } else sendJson(res, 404, { error: "not_found", error_description: "only GET /metrics is served here" });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
