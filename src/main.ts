import { parseArgs } from "node:util";
import { parseApplicationInput } from "./accounts/applications.js";
import type { DemoCredentials } from "./accounts/seed.js";
import { parseUserInput } from "./accounts/users.js";
import { systemClock } from "./clock.js";
import { OPS_DEFAULTS, optionsTable, parseServeConfig, resolveServeOption, SERVE_OPTIONS } from "./config.js";
import { createDomain, type Domain } from "./domain.js";
import { createLogger, errorFields } from "./log.js";
import { OAuthError } from "./oauth/errors.js";
import { startServer } from "./server.js";
import { openDb } from "./store/db.js";
import type { ApplicationRecord } from "./store/applications.js";
import { createStore } from "./store/index.js";
import type { UserRecord } from "./store/users.js";

const USAGE = `usage: identity <command>

  serve [options]                      run the service
  app create|list|show|update|delete   manage applications
  user create|list|show|update|delete  manage users
  keys list|rotate|export              manage signing keys

Admin commands work directly on the database named by --database / DATABASE_URL.
\`keys rotate\` also reads --key-activation-delay-seconds (or its variable, as serve does).

serve options (a flag beats its environment variable):
${SERVE_OPTIONS.map((o) => `  --${o.flag.padEnd(16)} ${o.env.padEnd(24)} ${o.description} (default: ${o.default || "none"})`).join("\n")}
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return serve(rest);
    case "app":
    case "user":
    case "keys":
      return admin(command, rest);
    case undefined:
    case "help":
    case "--help":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`identity serve [options]; a flag beats its environment variable.\n\n${optionsTable()}`);
    return 0;
  }
  const config = parseServeConfig(args, process.env);
  const logger = createLogger({ level: config.logLevel ?? OPS_DEFAULTS.logLevel, pretty: config.logPretty ?? OPS_DEFAULTS.logPretty });
  const server = await startServer(config, { logger });
  process.stdout.write(`identity-service listening on ${server.url} (issuer ${server.issuer})\n`);
  if (server.metricsUrl) process.stdout.write(`metrics on ${server.metricsUrl}\n`);
  if (server.demo) process.stdout.write(demoBanner(server.url, server.demo));

  // First signal: drain and exit 0. Second signal: exit at once.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn("second signal: exiting without waiting", { signal });
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    stopping = true;
    logger.info("shutting down", { signal, timeout_seconds: config.shutdownTimeoutSeconds ?? OPS_DEFAULTS.shutdownTimeoutSeconds });
    server.close().then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (err: unknown) => {
        logger.error("shutdown failed", errorFields(err));
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return new Promise(() => {}); // runs until a signal
}

function demoBanner(url: string, demo: DemoCredentials): string {
  return `
First start: created a demo application and user. These secrets are shown only once.
  client_id:     ${demo.clientId}
  client_secret: ${demo.clientSecret}
  username:      ${demo.username}
  password:      ${demo.password}

Try it:
  curl -s -u '${demo.clientId}:${demo.clientSecret}' -d grant_type=password -d username=${demo.username} -d password='${demo.password}' -d 'scope=openid profile email' ${url}/api/login/oauth/access_token
`;
}

/** Flags shared by the admin commands, mapped onto the config-file field names. */
const ADMIN_FLAGS = {
  database: { type: "string" },
  name: { type: "string" },
  "client-id": { type: "string" },
  "client-secret": { type: "string" },
  "redirect-uri": { type: "string", multiple: true },
  "grant-type": { type: "string", multiple: true },
  provider: { type: "string", multiple: true },
  "expire-in-hours": { type: "string" },
  "refresh-expire-in-hours": { type: "string" },
  password: { type: "string" },
  "display-name": { type: "string" },
  email: { type: "string" },
  "email-verified": { type: "boolean" },
  avatar: { type: "string" },
  phone: { type: "string" },
  address: { type: "string" },
  admin: { type: "boolean" },
  disabled: { type: "boolean" },
  kid: { type: "string" },
  "key-activation-delay-seconds": { type: "string" },
} as const;

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const PLURAL: Record<string, string> = { redirectUri: "redirectUris", grantType: "grantTypes", provider: "providers", admin: "isAdmin" };
const NUMERIC = new Set(["expireInHours", "refreshExpireInHours"]);

async function admin(noun: string, args: string[]): Promise<number> {
  const [verb, ...rest] = args;
  const { values } = parseArgs({ args: rest, options: ADMIN_FLAGS, strict: true, allowPositionals: false });
  const fields: Record<string, unknown> = {};
  for (const [flag, value] of Object.entries(values)) {
    if (flag === "database" || flag === "kid" || flag === "key-activation-delay-seconds") continue;
    const key = PLURAL[camel(flag)] ?? camel(flag);
    fields[key] = NUMERIC.has(key) ? Number(value) : value;
  }
  const db = await openDb({ url: (values.database as string | undefined) ?? process.env.DATABASE_URL ?? "./data/identity.sqlite" });
  try {
    const activationDelaySeconds = resolveServeOption("keyActivationDelaySeconds", values["key-activation-delay-seconds"], process.env);
    const domain = await createDomain({
      store: createStore(db),
      clock: systemClock,
      issuer: "http://localhost",
      keyActivationDelayMs: activationDelaySeconds === undefined ? undefined : activationDelaySeconds * 1000,
    });
    const result = await runAdmin(domain, noun, verb, fields, values.kid as string | undefined);
    process.stdout.write(typeof result === "string" ? result : JSON.stringify(result, null, 2) + "\n");
    return 0;
  } finally {
    await db.destroy();
  }
}

async function runAdmin(domain: Domain, noun: string, verb: string | undefined, fields: Record<string, unknown>, kid?: string): Promise<unknown> {
  const name = () => {
    if (typeof fields.name !== "string") throw new OAuthError("invalid_request", "--name is required");
    return fields.name;
  };
  const publicApp = ({ clientSecretHash: _h, ...app }: ApplicationRecord) => app;
  const publicUser = ({ passwordHash: _h, ...user }: UserRecord) => user;
  const key = `${noun} ${verb}`;
  switch (key) {
    case "app create":
    case "app update": {
      const input = parseApplicationInput(fields);
      const saved = verb === "create" ? await domain.applicationAdmin.create(input) : await domain.applicationAdmin.update(input);
      return { ...publicApp(saved.app), ...(saved.clientSecret ? { clientSecret: saved.clientSecret } : {}) };
    }
    case "app list":
      return (await domain.applicationAdmin.list()).map(publicApp);
    case "app show":
      return publicApp(await domain.applicationAdmin.get(name()));
    case "app delete":
      await domain.applicationAdmin.delete(name());
      return { deleted: name() };
    case "user create":
      return publicUser(await domain.userAdmin.create(parseUserInput(fields)));
    case "user update":
      return publicUser(await domain.userAdmin.update(parseUserInput(fields)));
    case "user list":
      return (await domain.userAdmin.list()).map(publicUser);
    case "user show":
      return publicUser(await domain.userAdmin.get(name()));
    case "user delete":
      await domain.userAdmin.delete(name());
      return { deleted: name() };
    case "keys list": {
      const { kid: signing } = await domain.keys.signingKey();
      const now = Date.now();
      const state = (k: { kid: string; activeFrom: number; retiredAt: number | null }) =>
        k.retiredAt !== null ? "retired" : k.kid === signing ? "signing" : k.activeFrom > now ? "pending" : "retiring";
      return (await domain.keys.list()).map(({ privateJwk: _p, publicJwk: _j, ...k }) => ({ ...k, state: state(k) }));
    }
    case "keys rotate": {
      const { privateJwk: _p, ...record } = await domain.keys.rotate();
      return record;
    }
    case "keys export": {
      const exported = await domain.keys.export(kid);
      return `# kid ${exported.kid}\n${exported.publicKeyPem}${exported.certificatePem}`;
    }
    default:
      throw new OAuthError("invalid_request", `unknown command: ${noun} ${verb ?? ""}`.trim());
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
  },
);
