import type { DemoCredentials } from "./accounts/seed.js";
import { runAdminCommand } from "./adminCommands.js";
import { parseServeConfig, SERVE_OPTIONS } from "./config.js";
import { OAuthError } from "./oauth/errors.js";
import { startServer } from "./server.js";

const FLAG_WIDTH = Math.max(...SERVE_OPTIONS.map((o) => o.flag.length));
const ENV_WIDTH = Math.max(...SERVE_OPTIONS.map((o) => o.env.length));

const USAGE = `usage: identity <command>

  serve [options]                      run the service
  app create|list|show|update|delete   manage applications
  user create|list|show|update|delete  manage users
  provider create|list|show|update|delete
                                       manage Custom login providers
  keys list|rotate|export              manage signing keys

Admin commands work directly on the database named by --database / DATABASE_URL.
Provider client secrets are encrypted with IDENTITY_SECRET_KEY when it is set.

serve options (a flag beats its environment variable):
${SERVE_OPTIONS.map((o) => `  --${o.flag.padEnd(FLAG_WIDTH)} ${o.env.padEnd(ENV_WIDTH)} ${o.description} (default: ${o.default || "none"})`).join("\n")}
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return serve(rest);
    case "app":
    case "user":
    case "provider":
    case "keys":
      process.stdout.write(await runAdminCommand(command, rest, process.env));
      return 0;
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
  const config = parseServeConfig(args, process.env);
  const server = await startServer(config);
  const stop = () => {
    server.close().then(() => process.exit(0), () => process.exit(1));
  };
  // Before the ready line: whoever waits for it may stop us right away.
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  process.stdout.write(`identity-service listening on ${server.url} (issuer ${server.issuer})\n`);
  if (server.demo) process.stdout.write(demoBanner(server.url, server.demo));
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
