import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { applyConfigFile, loadConfigFile } from "./accounts/configFile.js";
import { seedDemo, type DemoCredentials } from "./accounts/seed.js";
import { systemClock, type Clock } from "./clock.js";
import { OPS_DEFAULTS, type ServeConfig } from "./config.js";
import { createDomain, type Domain } from "./domain.js";
import { createLogger, errorFields, type Logger } from "./log.js";
import { listenMetrics, opsEndpoints, OPS_PATHS, type MetricsListener } from "./ops/endpoints.js";
import { PromMetrics } from "./ops/metrics.js";
import { observeRequests } from "./ops/observe.js";
import { routeNamer } from "./ops/routes.js";
import { annotateRequest, currentRequest } from "./requestContext.js";
import { sendJson } from "./rest/errors.js";
import { createRestFacade } from "./rest/facade.js";
import { oauthErrorInterceptor } from "./rpc/errors.js";
import { reflectionService } from "./rpc/reflection.js";
import { serviceBindings } from "./rpc/services.js";
import { openDb } from "./store/db.js";
import { createStore } from "./store/index.js";
import { listenOnePort } from "./transport.js";

export interface ServerDeps {
  clock?: Clock;
  /** Replaces the logger the config describes (tests capture or silence it). */
  logger?: Logger;
  /** How often each instance re-reads the signing keys (ms). */
  keyReloadMs?: number;
}

export interface RunningServer {
  /** Where it listens, e.g. http://127.0.0.1:8000. */
  url: string;
  port: number;
  issuer: string;
  domain: Domain;
  /** Credentials of the demo application and user, only on a new database. */
  demo?: DemoCredentials;
  /** Where /metrics is served when it has a port of its own. */
  metricsUrl?: string;
  /**
   * Graceful stop: refuse new connections, let requests in flight finish
   * (within --shutdown-timeout-seconds), then close the database pool.
   */
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The composition root: config -> store -> domain -> front doors -> one port. */
export async function startServer(config: ServeConfig, deps: ServerDeps = {}): Promise<RunningServer> {
  const clock = deps.clock ?? systemClock;
  const logger =
    deps.logger ?? createLogger({ level: config.logLevel ?? OPS_DEFAULTS.logLevel, pretty: config.logPretty ?? OPS_DEFAULTS.logPretty });
  const metricsMode = config.metrics ?? OPS_DEFAULTS.metrics;
  const configFile = config.configFile ? await loadConfigFile(config.configFile) : undefined;
  const db = await openDb({ url: config.database });

  // Listen first: the default issuer names the port, which port 0 only reveals now.
  let ready: Handler | undefined;
  let listener;
  try {
    listener = await listenOnePort(
      (req, res) => (ready ? ready(req as IncomingMessage, res as ServerResponse) : sendJson(res as ServerResponse, 503, { error: "temporarily_unavailable" })),
      config.host,
      config.port,
    );
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${listener.port}`;
  const issuer = config.issuer ?? `http://localhost:${listener.port}`;

  let metricsListener: MetricsListener | undefined;
  const close = async () => {
    await listener.close((config.shutdownTimeoutSeconds ?? OPS_DEFAULTS.shutdownTimeoutSeconds) * 1000);
    await metricsListener?.close();
    await db.destroy();
  };

  try {
    const metrics = metricsMode === "off" ? undefined : new PromMetrics(db);
    const domain = await createDomain({
      store: createStore(db),
      clock,
      issuer,
      adminToken: config.adminToken,
      keyReloadMs: deps.keyReloadMs,
      keyActivationDelayMs: config.keyActivationDelaySeconds === undefined ? undefined : config.keyActivationDelaySeconds * 1000,
      metrics,
    });
    if (configFile) await applyConfigFile(configFile, domain);
    const demo = configFile ? undefined : await seedDemo(domain);
    if (metrics && typeof metricsMode === "object") {
      metricsListener = await listenMetrics(metrics, config.host, metricsMode.port, logger);
    }
    ready = frontDoors(domain, config, logger, metrics);
    return { url, port: listener.port, issuer, domain, demo, metricsUrl: metricsListener?.url, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * The request chain: observation (request id, log line, metrics) around
 * probes -> REST facade -> Connect adapter -> 404.
 */
function frontDoors(domain: Domain, config: ServeConfig, logger: Logger, metrics: PromMetrics | undefined): Handler {
  // Inside a request the error goes on its log line, with the request id.
  const logUnexpected = (err: unknown) =>
    currentRequest() ? annotateRequest({ unexpected: err }) : logger.error("unexpected error", errorFields(err));
  const bindings = serviceBindings(domain);
  const probes = opsEndpoints({
    db: domain.store.db,
    keys: domain.keys,
    logger,
    metrics: (config.metrics ?? OPS_DEFAULTS.metrics) === "same" ? metrics : undefined,
  });
  const rest = createRestFacade(bindings, { maxBodyBytes: config.maxBodyBytes, log: logUnexpected });
  const connect = connectNodeAdapter({
    routes(router) {
      for (const { service, impl } of bindings) router.service(service, impl);
      router.service(ServerReflection, reflectionService(bindings.map((b) => b.service)));
    },
    interceptors: [oauthErrorInterceptor(logUnexpected)],
    readMaxBytes: config.maxBodyBytes,
    fallback: (_req, res) => sendJson(res as ServerResponse, 404, { error: "not_found", error_description: "no such path" }),
  });

  const chain: Handler = (req, res) => {
    if (probes(req, res)) return;
    rest(req, res)
      .then((handled) => {
        if (!handled) connect(req, res);
      })
      .catch((err) => {
        logUnexpected(err);
        if (!res.headersSent) sendJson(res, 500, { error: "server_error", error_description: "internal error" });
        else res.destroy();
      });
  };
  return observeRequests(chain, {
    logger,
    metrics,
    routeOf: routeNamer(bindings, OPS_PATHS),
    quietRoutes: new Set(OPS_PATHS),
  });
}
