import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ServerReflection } from "./../../gen/grpc/reflection/v1/reflection_pb.js";
import { applyConfigFile, loadConfigFile, type ConfigFile } from "./configFile.js";
import { seedDemo, type DemoCredentials } from "./seed.js";
import { systemClock, type Clock } from "./../shared/clock.js";
import { MIN_ADMIN_TOKEN_LENGTH, OPS_DEFAULTS, withDefaults, type ServeConfig } from "./config.js";
import type { BackchannelLogoutOptions } from "./../oauth/backchannelLogout.js";
import { createDomain, type Domain, type DomainOptions } from "./../domain/index.js";
import type { Door } from "./../http/door.js";
import { CLEANUP_DEFAULTS, CleanupJob } from "./housekeeping.js";
import { clientAddressResolver } from "./../http/clientAddress.js";
import { createLogger, errorFields, type Logger } from "./../shared/log.js";
import { listenMetrics, opsEndpoints, OPS_PATHS, type MetricsListener } from "./../ops/endpoints.js";
import { PromMetrics } from "./../ops/metrics.js";
import { isGrpc, observeRequests, observeStreams, watchGrpcTrailer, type StreamHandler, type TargetHandler } from "./../ops/observe.js";
import { routeNamer } from "./../ops/routes.js";
import { annotateRequest, requestContextOf, type LogUnexpected } from "./../http/requestContext.js";
import { sendJson } from "./../http/answers.js";
import { withCrossOrigin } from "./../http/cors.js";
import { createRestFacade } from "./../rest/facade.js";
import { createRegistrationEndpoint, REGISTRATION_ROUTES } from "./../rest/registration.js";
import { PROTECTED_RESOURCE_METADATA_PATH } from "./../oauth/discovery.js";
import { buildRouteTable, type RouteTable } from "./../rest/routes.js";
import { prepareForConnect } from "./../rpc/adapterInput.js";
import { oauthErrorInterceptor, toConnectError } from "./../rpc/errors.js";
import { createGrpcUnaryDoor } from "./../rpc/grpcUnary.js";
import { callContextValues } from "./../rpc/headers.js";
import { reflectionService } from "./../rpc/reflection.js";
import { serviceBindings, type ServiceBinding } from "./../rpc/services.js";
import { useBufferTextEncoding } from "./../rpc/textEncoding.js";
import { correctErrorAnswers } from "./../rpc/errorAnswers.js";
import { sqliteFile, withDbLock, type Db } from "./../store/db.js";
import { sqliteFilesOthersMayRead } from "./../store/fileModes.js";
import { openDatabase } from "./database.js";
import { createStore, type Store, type StoreOptions } from "./../store/index.js";
import { startWalCheckpoints } from "./../store/walCheckpoints.js";
import { listenOnePort, type ConnectionLimits, type OnePortOptions, type OnePortServer } from "./../http/transport.js";
import { createWebHandler, WEB_ROUTES } from "./../web/handler.js";
import type { MailPolicy } from "./../accounts/mailer.js";
import { createLogoutHandler, LOGOUT_PATH } from "./../web/logout.js";

export interface ServerDeps {
  clock?: Clock;
  /** Replaces the logger the config describes (tests capture or silence it). */
  logger?: Logger;
  /** How often each instance re-reads the signing keys (ms); overrides config.keyReloadSeconds. */
  keyReloadMs?: number;
  /** How often the TLS certificate and key files are read for a change (ms); default DEFAULT_TLS_RELOAD_MS. */
  tlsReloadMs?: number;
  /** Test hooks for the two deliberately slow steps: key generation and password hashing. */
  generateKeyPair?: DomainOptions["generateKeyPair"];
  secretHashCost?: DomainOptions["secretHashCost"];
  /** Which fast paths run; by default as IDENTITY_PLAIN_PATHS says (see fastPathsFrom). */
  fastPaths?: FastPaths;
  /**
   * A first start's seed also makes an administrator, whose password is
   * printed once (seed.ts). `identity serve` sets it when its standard
   * output is a terminal; by default none is made.
   */
  seedAdmin?: boolean;
  /** How hard each mail is tried (tests shorten the pauses); DEFAULT_MAIL_POLICY otherwise. */
  mailPolicy?: MailPolicy;
  /** Back-channel logout delivery's polling and retry pauses (tests shorten them); the defaults otherwise. */
  backchannelLogout?: Partial<BackchannelLogoutOptions>;
}

/**
 * The fast paths (docs/architecture.md, "Fast paths"), each with a plain
 * path beside it: the unary gRPC door (else Connect's adapter serves every
 * call) and the row reader (else each hot lookup is one Knex query).
 */
export interface FastPaths {
  grpcUnary: boolean;
  rowReader: boolean;
  groupCommit: boolean;
  auditStaging: boolean;
  jtiBatches: boolean;
}

const PLAIN_PATH_NAMES = { "grpc-unary": "grpcUnary", "row-reader": "rowReader", "group-commit": "groupCommit", "audit-staging": "auditStaging", "jti-batch": "jtiBatches" } as const;

/**
 * IDENTITY_PLAIN_PATHS: unset, empty or 0 runs every fast path; 1 none (CI
 * runs the suite both ways); a comma list of PLAIN_PATH_NAMES' keys
 * turns off those alone, which the bench uses to measure each on its own.
 */
export function fastPathsFrom(value: string | undefined): FastPaths {
  const fast: FastPaths = { grpcUnary: true, rowReader: true, groupCommit: true, auditStaging: true, jtiBatches: true };
  if (value === undefined || value === "" || value === "0") return fast;
  if (value === "1") return { grpcUnary: false, rowReader: false, groupCommit: false, auditStaging: false, jtiBatches: false };
  for (const name of value.split(",")) {
    const path = PLAIN_PATH_NAMES[name.trim() as keyof typeof PLAIN_PATH_NAMES];
    if (!path) throw new Error(`IDENTITY_PLAIN_PATHS: 0, 1 or a comma list of ${Object.keys(PLAIN_PATH_NAMES).join(", ")}, not ${value}`);
    fast[path] = false;
  }
  return fast;
}

/** The store's share of the fast paths, as createStore takes them. */
export function storePaths(fast: FastPaths): Pick<StoreOptions, "fastReads" | "groupCommit" | "auditStaging" | "jtiBatches"> {
  return { fastReads: fast.rowReader, groupCommit: fast.groupCommit, auditStaging: fast.auditStaging, jtiBatches: fast.jtiBatches };
}

export interface RunningServer {
  /** Where it listens, e.g. http://127.0.0.1:8000 (https:// with --tls-cert). */
  url: string;
  port: number;
  issuer: string;
  domain: Domain;
  /** The store under the domain, for the process (workers' cache messages) and for tests; never for a front door. */
  store: Store;
  /** Credentials of the demo application and user (and of an administrator, if asked), only on a new database. */
  demo?: DemoCredentials;
  /** Where /metrics is served when it has a port of its own. */
  metricsUrl?: string;
  /** The metrics it serves, unless --metrics off (serve --workers sums them over the workers). */
  metrics?: PromMetrics;
  /** What serves unary gRPC calls and the hot lookups: the fast paths or the plain ones (IDENTITY_PLAIN_PATHS). */
  paths: {
    grpcUnary: "unary door" | "connect";
    reads: Store["readPath"];
    tokenWrites: Store["issuedTokens"]["path"];
    auditWrites: Store["auditEvents"]["writePath"];
    jtiWrites: Store["clientAssertionJtis"]["path"];
  };
  /**
   * Graceful stop: refuse new connections, let requests in flight finish
   * (within --shutdown-timeout-seconds), stop background jobs, close the pool.
   */
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** What serves requests once the domain is up: HTTP/2 streams served as they come (with the gRPC door), then every request. */
interface FrontDoors {
  streams?: StreamHandler;
  requests: Handler;
}

/** The composition root: config -> store -> domain -> front doors -> one port. */
export async function startServer(given: ServeConfig, deps: ServerDeps = {}): Promise<RunningServer> {
  useBufferTextEncoding();
  const config = withDefaults(given);
  refuseInconsistent(config);
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ level: config.logLevel!, pretty: config.logPretty ?? OPS_DEFAULTS.logPretty });
  const fast = deps.fastPaths ?? fastPathsFrom(process.env.IDENTITY_PLAIN_PATHS);
  const configFile = config.configFile ? await loadConfigFile(config.configFile) : undefined;
  const db = await openDatabase({
    url: config.database,
    poolMin: config.dbPoolMin,
    poolMax: config.dbPoolMax,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    queryTimeoutMs: config.dbQueryTimeoutMs,
    log: (message) => logger.error("database driver warning", { warning: message }),
  });

  // Listen first: the default issuer names the port, which port 0 only reveals now.
  let ready: FrontDoors | undefined;
  let listener: OnePortServer;
  try {
    listener = await listenOnePort(portOptions(config, deps, logger, fast, () => ready));
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const url = listeningUrl(config.host, listener.port, listener.tls !== undefined);
  // The URL printed at start: a browser that follows it stays on the issuer's
  // host, so cookies set there (sign-in, federation state) come back.
  const issuer = config.issuer ?? url;

  const store = createStore(db, { ...storePaths(fast), logger });
  const jobs = backgroundJobs(db, config, clock, logger);
  let metricsListener: MetricsListener | undefined;
  let domainMade: Domain | undefined;
  const close = async () => {
    await listener.close(config.shutdownTimeoutSeconds! * 1000);
    await metricsListener?.close();
    // Mail queued by requests already answered goes out (or is given up) before the store closes.
    await domainMade?.selfService.drain();
    // Deliveries under way finish (or are left to the queue) before the store closes.
    await domainMade?.backchannelLogouts.stop();
    await jobs.stop();
    await store.close();
    await db.destroy();
  };

  try {
    const metricsMode = config.metrics!;
    const metrics = metricsMode === "off" ? undefined : new PromMetrics(() => store.poolStats());
    const options = domainOptions(config, deps, { store, clock, issuer, logger, metrics, trustedIssuers: configFile?.trustedIssuers });
    // Instances starting together on one database would each create the first
    // signing key, the demo seed, or the config file's entries, and all but
    // one would then fail on a unique name. One at a time, the later ones
    // find the work done.
    const { domain, demo } = await withDbLock(db, "provision", async () => {
      const domain = (domainMade = await createDomain(options));
      return { domain, demo: await provision(domain, store, configFile, deps, logger) };
    });
    await warnAtStart(domain, store, logger);
    if (metrics && typeof metricsMode === "object") {
      metricsListener = await listenMetrics(metrics, config.metricsHost ?? config.host, metricsMode.port, logger, config.metricsToken);
    }
    ready = frontDoors(domain, config, logger, metrics, fast.grpcUnary);
    jobs.start();
    domain.backchannelLogouts.start();
    const paths = {
      grpcUnary: ready.streams ? ("unary door" as const) : ("connect" as const),
      reads: store.readPath,
      tokenWrites: store.issuedTokens.path,
      auditWrites: store.auditEvents.writePath,
      jtiWrites: store.clientAssertionJtis.path,
    };
    return { url, port: listener.port, issuer, domain, store, demo, metricsUrl: metricsListener?.url, metrics, paths, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Settings that only make sense together, and rules a config built in code must meet as the command line's does. */
function refuseInconsistent(config: ServeConfig): void {
  if (config.adminToken && config.adminToken.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new Error(`the admin token must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (--admin-token / IDENTITY_ADMIN_TOKEN)`);
  }
  if (!config.tlsCert !== !config.tlsKey) throw new Error("--tls-cert and --tls-key go together: give both, or neither");
  if (!config.smtpUrl !== !config.mailFrom) throw new Error("--smtp-url and --mail-from go together: give both, or neither");
}

/** The one port's options: the door chain once it is ready (503 until then), limits, the gRPC door, TLS. */
function portOptions(config: ServeConfig, deps: ServerDeps, logger: Logger, fast: FastPaths, ready: () => FrontDoors | undefined): OnePortOptions {
  return {
    handler: (req, res) => {
      const doors = ready();
      if (doors) doors.requests(req as IncomingMessage, res as ServerResponse);
      else sendJson(res as ServerResponse, 503, { error: "temporarily_unavailable" });
    },
    host: config.host,
    port: config.port,
    limits: connectionLimits(config),
    streamHandler: fast.grpcUnary ? (stream, headers) => ready()?.streams?.(stream, headers) ?? false : undefined,
    tls:
      config.tlsCert && config.tlsKey
        ? {
            certFile: config.tlsCert,
            keyFile: config.tlsKey,
            reloadIntervalMs: deps.tlsReloadMs,
            onReload: ({ leaf }) =>
              logger.info("TLS certificate reloaded", {
                cert_file: config.tlsCert,
                subject: leaf.subject,
                serial: leaf.serialNumber,
                fingerprint_sha256: leaf.fingerprint256,
                valid_to: leaf.validTo,
              }),
            onReloadError: (err) => logger.error("TLS certificate not reloaded: the one in use stays", { error: err.message }),
          }
        : undefined,
  };
}

/** The cleanup job and, on a SQLite file, WAL checkpoints; a warning for database files others may read. */
function backgroundJobs(db: Db, config: ServeConfig, clock: Clock, logger: Logger) {
  const cleanup = new CleanupJob(db, clock, logger, {
    ...CLEANUP_DEFAULTS,
    intervalMs: config.cleanupIntervalSeconds! * 1000,
    batchSize: config.cleanupBatchSize!,
    auditRetentionMs: config.auditRetentionDays! * 24 * 3600 * 1000,
  });
  const file = sqliteFile(db);
  // Files made by an older version, or by hand, keep their modes: said once at start, not changed.
  const exposed = file === undefined ? [] : sqliteFilesOthersMayRead(file);
  if (exposed.length > 0) {
    logger.warn("database files others may read: they hold the private signing keys; chmod 600 each file and 700 its folder", { files: exposed });
  }
  const checkpoints =
    file === undefined ? undefined : startWalCheckpoints(file, (err) => logger.error("database checkpoint failed", errorFields(err)));
  return {
    start: () => {
      if (config.cleanupIntervalSeconds! > 0) cleanup.start();
    },
    stop: async () => {
      await cleanup.stop();
      await checkpoints?.stop();
    },
  };
}

/** What the domain is built from: the config's settings, resolved (withDefaults), and the process's parts. */
function domainOptions(
  config: ServeConfig,
  deps: ServerDeps,
  parts: Pick<DomainOptions, "store" | "clock" | "issuer" | "metrics" | "trustedIssuers"> & { logger: Logger },
): DomainOptions {
  const { logger } = parts;
  return {
    ...parts,
    adminToken: config.adminToken,
    keyReloadMs: deps.keyReloadMs ?? config.keyReloadSeconds! * 1000,
    keyActivationDelayMs: config.keyActivationDelaySeconds! * 1000,
    refreshReuseGraceSeconds: config.refreshReuseGraceSeconds,
    consoleProviders: config.consoleProviders,
    loginPolicy: { maxFailures: config.loginMaxFailures!, lockoutSeconds: config.loginLockoutSeconds!, maxFailuresPerAddress: config.loginMaxFailuresPerIp },
    onLockout: (lockout) => logger.warn("sign-in locked after repeated failures", { ...lockout, until: new Date(lockout.until).toISOString() }),
    clientAuthPolicy: {
      maxFailures: config.clientAuthMaxFailures!,
      maxFailuresPerAddress: config.clientAuthMaxFailuresPerIp!,
      lockoutSeconds: config.clientAuthLockoutSeconds!,
    },
    onClientLockout: (lockout) =>
      logger.warn("client authentication locked after repeated failures", { ...lockout, until: new Date(lockout.until).toISOString() }),
    sessionTtlSeconds: config.sessionTtlSeconds,
    codeTtlSeconds: config.codeTtlSeconds,
    deviceCodeTtlSeconds: config.deviceCodeTtlSeconds,
    requirePushedAuthorizationRequests: config.requirePushedAuthorizationRequests,
    pushedRequestsMaxPerClient: config.pushedRequestsMaxPerClient,
    generateKeyPair: deps.generateKeyPair,
    secretHashCost: deps.secretHashCost,
    secretKey: config.secretKey,
    dpopNonce: config.dpopNonce,
    federationTimeoutMs: config.federationTimeoutMs,
    clientRegistration: { mode: config.clientRegistration!, token: config.registrationToken, maxPerHour: config.registrationMaxPerHour! },
    allowInsecureClientMetadata: config.allowInsecureClientMetadata,
    auditEvents: config.auditEvents,
    selfService: {
      mail: config.smtpUrl && config.mailFrom ? { smtpUrl: config.smtpUrl, from: config.mailFrom, policy: deps.mailPolicy } : undefined,
      passwordMinLength: config.passwordMinLength,
      emailLinkTtlSeconds: config.emailLinkTtlSeconds,
      signupMaxPerHour: config.signupMaxPerHour,
    },
    backchannelLogout: deps.backchannelLogout,
  };
}

/** What a start sets up once per database: the console's application, the config file's entries, the demo seed. */
async function provision(domain: Domain, store: Store, configFile: ConfigFile | undefined, deps: ServerDeps, logger: Logger): Promise<DemoCredentials | undefined> {
  // The console's application first: the config file's consoleProviders is stored on it.
  const consoleClient = await domain.ensureConsoleClient();
  if (consoleClient !== "unchanged") {
    logger.info(`admin console application ${consoleClient}`, { clientId: domain.console.clientId, redirectUri: domain.console.redirectUri });
  }
  if (configFile) await applyConfigFile(configFile, domain, store);
  return configFile ? undefined : await seedDemo(domain, { admin: deps.seedAdmin ?? false });
}

/** Said once at start: provider secrets that cannot be read, and console providers that do not exist. */
async function warnAtStart(domain: Domain, store: Store, logger: Logger): Promise<void> {
  for (const warning of await domain.providerAdmin.secretWarnings()) logger.error(warning);
  // A name that matches no provider shows no button: say so rather than leave an admin without one.
  const providerNames = new Set((await store.providers.list()).map((p) => p.name));
  for (const name of (domain.consoleProviders.override ?? []).filter((n) => !providerNames.has(n))) {
    logger.warn("--console-providers names a login provider that does not exist; the console's sign-in page does not offer it", { provider: name });
  }
}

/**
 * Where a client on this machine reaches the server: the listening address,
 * or the loopback address for a wildcard one (0.0.0.0, ::), which no client
 * can call; https when the port speaks TLS. It is the printed URL and the
 * issuer unless --issuer says otherwise.
 */
export function listeningUrl(host: string, port: number, secure = false): string {
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" || host === "[::]" ? "::1" : host;
  const bare = reachable.replace(/^\[(.*)\]$/, "$1");
  return `${secure ? "https" : "http"}://${bare.includes(":") ? `[${bare}]` : bare}:${port}`;
}

function connectionLimits(config: ServeConfig): ConnectionLimits {
  // Resolved by withDefaults from the option table, whose defaults are DEFAULT_CONNECTION_LIMITS.
  const limits = {
    maxHeaderBytes: config.maxHeaderBytes!,
    headersTimeoutMs: config.headersTimeoutSeconds! * 1000,
    requestTimeoutMs: config.requestTimeoutSeconds! * 1000,
    idleTimeoutMs: config.idleTimeoutSeconds! * 1000,
  };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error("--headers-timeout-seconds must not exceed --request-timeout-seconds: the headers are part of the request");
  }
  return limits;
}

/**
 * The REST operations a browser app on another origin calls: token, refresh,
 * revocation, userinfo, get-account (Casdoor's user object, read as userinfo
 * is: by Bearer token; no credentials mode, so no session cookie rides
 * along), discovery, JWKS.
 */
const CROSS_ORIGIN_REST = new Set([
  "identity.v1.TokenService.Token",
  "identity.v1.TokenService.Refresh",
  "identity.v1.IntrospectionService.Revoke",
  "identity.v1.IntrospectionService.GetUserInfo",
  "identity.v1.IntrospectionService.GetAccount",
  "identity.v1.DiscoveryService.GetConfiguration",
  "identity.v1.DiscoveryService.GetJwks",
  "identity.v1.DiscoveryService.GetProtectedResourceMetadata",
]);

/** The paths that answer browsers on other origins (http/cors.ts): those REST paths, and every RPC's Connect / gRPC-Web path. */
function crossOriginPaths(bindings: readonly ServiceBinding[], routes: RouteTable): string[] {
  const rest = [...routes]
    .filter(([, byMethod]) => [...byMethod.values()].some((r) => CROSS_ORIGIN_REST.has(`${r.method.parent.typeName}.${r.method.name}`)))
    .map(([path]) => path);
  const rpc = bindings.flatMap(({ service }) => service.methods.map((m) => `/${service.typeName}/${m.name}`));
  return [...rest, ...rpc];
}

/**
 * The request chain, each door inside observation (request id, log line,
 * metrics): unary gRPC on HTTP/2 streams as they come (with the gRPC door;
 * without it, Connect's adapter serves them); then, for every other
 * request, CORS on the paths browsers on other origins call (http/cors.ts),
 * then probes -> browser pages -> REST facade -> sign-out -> Connect
 * adapter (the rest of gRPC, gRPC-Web, Connect) -> 404.
 */
function frontDoors(domain: Domain, config: ServeConfig, logger: Logger, metrics: PromMetrics | undefined, grpcUnaryDoor: boolean): FrontDoors {
  // Inside a request the error goes on its log line, with the request id.
  const logUnexpected: LogUnexpected = (err, context) =>
    context ? annotateRequest(context, { unexpected: err }) : logger.error("unexpected error", errorFields(err));
  const bindings = serviceBindings(domain);
  const clientAddress = clientAddressResolver(config.trustedProxies ?? []);
  const httpOptions = { maxBodyBytes: config.maxBodyBytes, log: logUnexpected, clientAddress };
  const interceptors = [oauthErrorInterceptor(logUnexpected)];
  const contextValues = callContextValues(clientAddress);
  const probes = opsEndpoints({
    readiness: domain.readiness,
    logger,
    metrics: config.metrics === "same" ? metrics : undefined,
    metricsToken: config.metricsToken,
  });
  // Each answers the paths it owns and returns false for the rest.
  const httpDoors: Door[] = [
    probes,
    createWebHandler(domain, httpOptions),
    createRestFacade(bindings, { ...httpOptions, resourceMetadata: `${domain.issuer}${PROTECTED_RESOURCE_METADATA_PATH}` }),
    createLogoutHandler(domain, httpOptions),
    createRegistrationEndpoint(domain, httpOptions),
  ];
  const connect = connectNodeAdapter({
    routes(router) {
      for (const { service, impl } of bindings) router.service(service, impl);
      router.service(ServerReflection, reflectionService(bindings.map((b) => b.service)));
      correctErrorAnswers(router);
    },
    interceptors,
    contextValues: (req) => contextValues(req as IncomingMessage, requestContextOf(req)),
    readMaxBytes: config.maxBodyBytes,
    fallback: (_req, res) => sendJson(res as ServerResponse, 404, { error: "not_found", error_description: "no such path" }),
  });

  const unexpected = (req: IncomingMessage, res: ServerResponse) => (err: unknown) => {
    logUnexpected(err, requestContextOf(req));
    if (!res.headersSent) sendJson(res, 500, { error: "server_error", error_description: "internal error" });
    else res.destroy();
  };

  const chain: TargetHandler = (req, res, url) => {
    if (!url) {
      sendJson(res, 400, { error: "invalid_request", error_description: "malformed request target" });
      return;
    }
    try {
      for (const door of httpDoors) {
        const answer = door(req, res, url);
        if (answer === false) continue;
        if (answer !== true) answer.catch(unexpected(req, res));
        return;
      }
      prepareForConnect(req);
      if (isGrpc(req)) watchGrpcTrailer(res, requestContextOf(req));
      connect(req, res);
    } catch (err) {
      unexpected(req, res)(err);
    }
  };
  // CORS in front of the doors, on the paths a browser app on another origin calls.
  const routes = buildRouteTable(bindings);
  const crossOrigin = withCrossOrigin(
    {
      paths: crossOriginPaths(bindings, routes),
      allows: domain.allowsOrigin,
      onLookupError: (err, req) => logUnexpected(err, requestContextOf(req)),
    },
    chain,
  );
  const observation = {
    logger,
    metrics,
    routeOf: routeNamer(bindings.map((b) => b.service), routes.keys(), [...OPS_PATHS, ...WEB_ROUTES, LOGOUT_PATH, ...REGISTRATION_ROUTES]),
    quietRoutes: new Set(OPS_PATHS),
  };
  const grpcUnary =
    grpcUnaryDoor &&
    createGrpcUnaryDoor(bindings, {
      toConnectError: (failure, context) => toConnectError(failure, logUnexpected, context),
      contextValues,
      readMaxBytes: config.maxBodyBytes,
    });
  return {
    streams: grpcUnary ? observeStreams(grpcUnary, observation) : undefined,
    requests: observeRequests(crossOrigin, observation),
  };
}
