import { isAbsolute, relative } from "node:path";
import { SERVE_OPTIONS } from "./config.js";
import { FIRST_ADMIN_NAME, type DemoCredentials } from "./seed.js";
import { passkeysPossible, relyingPartyOf } from "../oauth/factors/passkeys.js";

const DEFAULT_DATABASE = SERVE_OPTIONS.find((o) => o.key === "database")!.default;

/** What the first start's lines need to know besides the credentials. */
export interface FirstStartContext {
  /** The listening URL, which the curl command calls. */
  url: string;
  issuer: string;
  /** The database serve opened (--database, DATABASE_URL or the default). */
  database: string;
  env: NodeJS.ProcessEnv;
  /** The script node runs (process.argv[1]), and the directory it was started in. */
  script: string | undefined;
  cwd: string;
}

/**
 * The lines a first start prints once: the demo's credentials, then the
 * console's URL with the administrator's name and password, or, when the
 * seed made none (standard output is not a terminal), the command that
 * makes one, then a curl command that gets a token.
 */
export function firstStartLines(demo: DemoCredentials, context: FirstStartContext): string {
  const { url, issuer } = context;
  const admin = demo.admin
    ? `  username:      ${demo.admin.username}
  password:      ${demo.admin.password}`
    : `  No administrator was created: standard output is not a terminal, and its password would be kept in the log.
  To create one, run, with a password of your choosing (in a container: through docker exec):
    ${adminCommand(context)}`;
  return `
First start: created a demo application and user${demo.admin ? ", and an administrator" : ""}. These secrets are shown only once.
  client_id:     ${demo.clientId}
  client_secret: ${demo.clientSecret}
  username:      ${demo.username}
  password:      ${demo.password}

Admin console: ${issuer.replace(/\/+$/, "")}/admin
${admin}
${passkeyNote(issuer)}
Try it:
  curl -s -u '${demo.clientId}:${demo.clientSecret}' -d grant_type=password -d username=${demo.username} -d password='${demo.password}' -d 'scope=openid profile email' ${url}/api/login/oauth/access_token
`;
}

/**
 * Browsers refuse an IP address as a passkey's relying-party id (WebAuthn
 * §5.1.3): where the issuer is one, say how to get passkeys locally.
 */
export function passkeyNote(issuer: string): string {
  if (passkeysPossible(relyingPartyOf(issuer))) return "";
  const port = new URL(issuer).port;
  return `
Passkeys need a host name, not an IP address: to try them on this machine, start with --issuer http://localhost${port ? `:${port}` : ""}
`;
}

/**
 * The command that makes the administrator, run from the directory serve
 * was started in: this same program, on this same database. The database is
 * named only when the command would not find it by itself (DATABASE_URL or
 * the default), and a URL's password is left out: the line goes to the log.
 */
export function adminCommand(context: Pick<FirstStartContext, "database" | "env" | "script" | "cwd">): string {
  const { database, env, script, cwd } = context;
  const path = script === undefined ? undefined : relative(cwd, script);
  const program = path === undefined ? "identity" : `node ${shellWord(path.startsWith("..") || isAbsolute(path) ? script! : path)}`;
  const sameDatabase = database === (env.DATABASE_URL || DEFAULT_DATABASE);
  return `${program} user create --name ${FIRST_ADMIN_NAME} --admin --password <password>${sameDatabase ? "" : ` --database ${shellWord(withoutPassword(database))}`}`;
}

function withoutPassword(database: string): string {
  if (!/^postgres(ql)?:\/\//.test(database)) return database;
  try {
    const url = new URL(database);
    if (url.password === "") return database;
    url.password = "PASSWORD";
    return url.href;
  } catch {
    return "<database URL>";
  }
}

/** A word the shell reads back as it is. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
