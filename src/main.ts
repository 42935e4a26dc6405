import { firstStartLines } from "./app/firstStart.js";
import { adminUsage, runAdminCommand } from "./app/adminCommands.js";
import { runBackupCommand, runMigrateCommand } from "./app/maintenance.js";
import { EVENTS_USAGE, runEventsCommand } from "./app/eventsCommand.js";
import { OPS_DEFAULTS, optionsTable, parseServeConfig, SERVE_OPTIONS } from "./app/config.js";
import { createLogger, errorFields, heldLines, logDestination } from "./shared/log.js";
import { OAuthError } from "./oauth/errors.js";
import { startServer } from "./app/server.js";
import { startTracing } from "./app/tracing.js";
import { isClusterPrimary, isClusterWorker, joinCluster, refuseUnsharedDatabase, runPrimary, workerCount, type Banner } from "./app/workers.js";
import { packageVersion } from "./app/version.js";

const FLAG_WIDTH = Math.max(...SERVE_OPTIONS.map((o) => o.flag.length));
const ENV_WIDTH = Math.max(...SERVE_OPTIONS.map((o) => o.env.length));

const USAGE = `usage: identity <command>

  serve [options]                      run the service
  app create|list|show|update|delete   manage applications
  user create|list|show|update|delete  manage users
  provider create|list|show|update|delete
                                       manage Custom login providers
  resource create|list|show|update|delete
                                       manage resource servers (RFC 8707 audiences)
  keys list|rotate|export              manage signing keys
  events [--user NAME] [--client ID] [--type EVENT] [--since TIME] [--limit N]
                                       print the audit trail, newest first (JSON lines)
  help [command]                       this overview, or a command's usage (also: identity <command> --help)
  version                              print the version (also: --version, -v)
  backup FILE                          copy the SQLite database to a new FILE, safe while serve runs
  migrate [--status]                   apply pending migrations, or list applied and pending ones

Admin, backup and migrate commands work directly on the database named by --database / DATABASE_URL.
Provider client secrets are encrypted with IDENTITY_SECRET_KEY when it is set.
\`keys rotate\` also reads --key-activation-delay-seconds (or its variable, as serve does).

serve options (a flag beats its environment variable):
${SERVE_OPTIONS.map((o) => `  --${o.flag.padEnd(FLAG_WIDTH)} ${o.env.padEnd(ENV_WIDTH)} ${o.description} (default: ${o.default || "none"})`).join("\n")}
`;

const SERVE_HELP = `identity serve [options]; a flag beats its environment variable.\n\n${optionsTable()}`;

/** `identity <command> --help`: serve's options, an admin noun's verbs and flags, or the command's lines of the overview. */
function commandHelp(command: string): string | undefined {
  if (command === "serve") return SERVE_HELP;
  if (command === "events") return EVENTS_USAGE;
  const admin = adminUsage(command);
  if (admin) return admin;
  const line = USAGE.split("\n").find((l) => l.startsWith(`  ${command} `) || l === `  ${command}`);
  if (!line) return undefined;
  const [synopsis, what] = line.trim().split(/\s{2,}/);
  return `usage: identity ${synopsis}\n${what ? `\n  ${what}\n` : ""}`;
}

const HELP_FLAGS = ["--help", "-h"];

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Every command answers --help (or -h) with its usage, before anything else.
  const help = command !== undefined && rest.some((arg) => HELP_FLAGS.includes(arg)) ? commandHelp(command) : undefined;
  if (help) {
    process.stdout.write(help);
    return 0;
  }
  switch (command) {
    case "serve":
      return serve(rest);
    case "app":
    case "user":
    case "provider":
    case "resource":
    case "keys":
      if (rest.length === 0) {
        process.stderr.write(adminUsage(command)!);
        return 2;
      }
      process.stdout.write(await runAdminCommand(command, rest, process.env));
      return 0;
    case "backup":
      process.stdout.write(await runBackupCommand(rest, process.env));
      return 0;
    case "migrate":
      process.stdout.write(await runMigrateCommand(rest, process.env));
      return 0;
    case "events":
      process.stdout.write(await runEventsCommand(rest, process.env));
      return 0;
    case "--version":
    case "-v":
    case "version":
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case "help": {
      // identity help <command>
      const about = rest[0] === undefined ? undefined : commandHelp(rest[0]);
      process.stdout.write(about ?? USAGE);
      return 0;
    }
    case undefined:
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  if (args.some((arg) => HELP_FLAGS.includes(arg))) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  const config = parseServeConfig(args, process.env);
  // A person at a terminal (not a container's or a service manager's log collector):
  // readable log lines unless JSON is asked for, and a first start makes an administrator.
  const terminal = process.stdout.isTTY === true;
  const pretty = config.logPretty ?? terminal;
  // On a terminal the start's own lines come first: log lines wait for them (a worker's, for the primary's).
  const held = terminal ? heldLines(logDestination(pretty)) : undefined;
  const logger = createLogger({ level: config.logLevel ?? OPS_DEFAULTS.logLevel, pretty, destination: held });
  const timeoutSeconds = config.shutdownTimeoutSeconds ?? OPS_DEFAULTS.shutdownTimeoutSeconds;
  const banner = (server: Banner, extra?: string) => {
    printBanner(server, config.database, extra);
    held?.release();
  };
  // --workers N: this process starts N workers (this same command) and serves nothing itself.
  const workers = workerCount(config.workers);
  refuseUnsharedDatabase(workers, config.database);
  if (workers > 1 && isClusterPrimary()) {
    const status = await runPrimary(workers, logger, (started, pids) => banner(started, `${workers} workers (pids ${pids.join(", ")})\n`), timeoutSeconds);
    held?.release();
    process.exit(status);
  }
  let tracing: Awaited<ReturnType<typeof startTracing>>;
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    // Before the server: its first requests are traced too. Nothing is loaded without the OTEL_* variables.
    tracing = await startTracing(process.env, logger);
    server = await startServer(config, { logger, seedAdmin: terminal });
  } catch (err) {
    // What the start logged before it failed explains the failure.
    held?.release();
    throw err;
  }

  // First signal: drain and exit 0. Second signal: exit at once. A worker drains on the primary's word too.
  let stopping = false;
  const drain = (signal?: NodeJS.Signals) => {
    held?.release();
    if (stopping && !signal) return;
    if (stopping) {
      logger.warn("second signal: exiting without waiting", { signal });
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    stopping = true;
    logger.info("shutting down", { signal: signal ?? "primary", timeout_seconds: timeoutSeconds });
    server.close().then(
      async () => {
        await tracing?.shutdown().catch((err: unknown) => logger.warn("tracing: spans not exported at shutdown", errorFields(err)));
        logger.info("stopped");
        process.exit(0);
      },
      (err: unknown) => {
        logger.error("shutdown failed", errorFields(err));
        process.exit(1);
      },
    );
  };
  // Before the ready line: whoever waits for it may stop us right away.
  process.on("SIGINT", drain);
  process.on("SIGTERM", drain);
  if (isClusterWorker()) joinCluster(server, () => drain(), () => held?.release());
  else banner(server);
  return new Promise(() => {}); // runs until a signal
}

function printBanner(server: Banner, database: string, extra = ""): void {
  if (process.env.IDENTITY_PLAIN_PATHS) {
    process.stdout.write(`IDENTITY_PLAIN_PATHS=${process.env.IDENTITY_PLAIN_PATHS}: unary gRPC by ${server.paths.grpcUnary}, hot reads by ${server.paths.reads}, token rows by ${server.paths.tokenWrites}, audit batches on the ${server.paths.auditWrites}, single-use keys ${server.paths.jtiWrites}\n`);
  }
  process.stdout.write(`identity-service listening on ${server.url} (issuer ${server.issuer})\n`);
  process.stdout.write(extra);
  if (server.metricsUrl) process.stdout.write(`metrics on ${server.metricsUrl}\n`);
  if (server.demo) {
    const context = { url: server.url, issuer: server.issuer, database, env: process.env, script: process.argv[1], cwd: process.cwd() };
    process.stdout.write(firstStartLines(server.demo, context));
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err: unknown) => {
    const message = err instanceof OAuthError ? err.description : err instanceof Error ? err.message : String(err);
    process.stderr.write(`identity: ${message}\n`);
    process.exitCode = 1;
    // A worker's channel to the primary would keep it alive.
    if (isClusterWorker()) process.exit(1);
  },
);
