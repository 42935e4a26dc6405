import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { applyConfigFile, loadConfigFile } from "./accounts/configFile.js";
import { seedDemo, type DemoCredentials } from "./accounts/seed.js";
import { systemClock, type Clock } from "./clock.js";
import type { ServeConfig } from "./config.js";
import { createDomain, type Domain } from "./domain.js";
import { errorFields, stderrLogger, type Logger } from "./log.js";
import { sendJson } from "./rest/errors.js";
import { createRestFacade } from "./rest/facade.js";
import { oauthErrorInterceptor } from "./rpc/errors.js";
import { reflectionService } from "./rpc/reflection.js";
import { serviceBindings } from "./rpc/services.js";
import { openDb } from "./store/db.js";
import { createStore } from "./store/index.js";
import { listenOnePort } from "./transport.js";
import { createWebHandler } from "./web/handler.js";

export interface ServerDeps {
  clock?: Clock;
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
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The composition root: config -> store -> domain -> front doors -> one port. */
export async function startServer(config: ServeConfig, deps: ServerDeps = {}): Promise<RunningServer> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? stderrLogger;
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

  const close = async () => {
    await listener.close();
    await db.destroy();
  };

  try {
    const domain = await createDomain({
      store: createStore(db),
      clock,
      issuer,
      adminToken: config.adminToken,
      keyReloadMs: deps.keyReloadMs,
      loginPolicy: { maxFailures: config.loginMaxFailures, lockoutSeconds: config.loginLockoutSeconds },
      sessionTtlSeconds: config.sessionTtlSeconds,
      codeTtlSeconds: config.codeTtlSeconds,
    });
    if (configFile) await applyConfigFile(configFile, domain);
    const demo = configFile ? undefined : await seedDemo(domain);
    ready = frontDoors(domain, config, logger);
    return { url, port: listener.port, issuer, domain, demo, close };
  } catch (err) {
    await close();
    throw err;
  }
}

function frontDoors(domain: Domain, config: ServeConfig, logger: Logger): Handler {
  const logUnexpected = (err: unknown) => logger.error("unexpected error", errorFields(err));
  const bindings = serviceBindings(domain);
  const web = createWebHandler(domain, { maxBodyBytes: config.maxBodyBytes, log: logUnexpected });
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

  return (req, res) => {
    web(req, res)
      .then((handled) => handled || rest(req, res))
      .then((handled) => {
        if (!handled) connect(req, res);
      })
      .catch((err) => {
        logUnexpected(err);
        if (!res.headersSent) sendJson(res, 500, { error: "server_error", error_description: "internal error" });
        else res.destroy();
      });
  };
}
