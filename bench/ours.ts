import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDb } from "../src/store/db.js";
import { jwtClientApplication } from "./clientKeys.js";
import { FORM, post } from "./load.js";
import { rssMiB, startService } from "./processes.js";

/** The token kinds the client_credentials rows compare: an application of each, seeded through the config file. */
export const KINDS = ["RS256", "ES256", "EdDSA", "opaque"] as const;
export type Kind = (typeof KINDS)[number];

const SECRET = "bench-secret-0123456789abcdef";
const clientId = (kind: Kind) => `bench-${kind.toLowerCase()}`;
/** What the RS256 application may exchange its tokens for (RFC 8693, the token exchange row). */
export const EXCHANGE_AUDIENCE = "bench-es256";
const exchange = { grantTypes: ["client_credentials", "password", "token_exchange"], exchangeAudiences: [EXCHANGE_AUDIENCE], allowImpersonation: true };
const application = (kind: Kind) => ({
  name: clientId(kind),
  clientId: clientId(kind),
  clientSecret: SECRET,
  grantTypes: ["client_credentials", "password"],
  expireInHours: 24,
  ...(kind === "opaque" ? { accessTokenStrategy: "opaque" } : { signingAlg: kind }),
  ...(kind === "RS256" ? exchange : {}),
});
export const BENCH_USER = { name: "bench-user", password: "bench-password-0123", displayName: "Bench User", email: "bench@example.com", emailVerified: true, phone: "+15550100", address: "1 Main St" };

export const basicAuth = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
/** Client authentication as the application of `kind` (RS256, the default, unless said). */
export const clientAuth = (kind: Kind = "RS256") => ({ authorization: basicAuth(clientId(kind), SECRET) });

export const TOKEN_PATH = "/api/login/oauth/access_token";
export const INTROSPECT_PATH = "/api/login/oauth/introspect";
export const USERINFO_PATH = "/api/userinfo";

export const tokenRequest = (kind: Kind = "RS256") => post(TOKEN_PATH, { grant_type: "client_credentials" }, clientAuth(kind));
export const introspectionRequests = (tokens: string[]) => tokens.map((token) => post(INTROSPECT_PATH, { token }, clientAuth()));
export const userinfoRequests = (tokens: string[]) =>
  tokens.map((token) => ({ method: "GET" as const, path: USERINFO_PATH, headers: { authorization: `Bearer ${token}` } }));

export interface OurServer {
  url: string;
  /** Every process that serves (one, or the cluster's workers). */
  pids: number[];
  stop(): Promise<void>;
}

export const databaseFile = (dir: string, name: string) => join(dir, `${name}.sqlite`);

/**
 * The built server (`dist/src/main.js serve`) on a SQLite file in `dir`,
 * with NODE_ENV=production and every default; with `workers` > 1,
 * `serve --workers`: a node:cluster of that many processes on one port.
 */
export async function startOurs(dir: string, name: string, workers = 1, env: NodeJS.ProcessEnv = {}): Promise<OurServer> {
  const configFile = join(dir, "config.json");
  writeFileSync(configFile, JSON.stringify({ applications: [...KINDS.map(application), jwtClientApplication()], users: [BENCH_USER] }));
  const args = ["dist/src/main.js", "serve", "--workers", String(workers), "--port", "0", "--host", "127.0.0.1", "--database", databaseFile(dir, name), "--config", configFile];
  const service = await startService({
    name: `server ${name}`,
    args,
    env: { NODE_ENV: "production", ...env },
    logFile: join(dir, `${name}.log`),
    // A cluster's primary prints the banner once, then a line naming its workers.
    ready: workers === 1 ? /identity-service listening on (http:\/\/\S+)/ : /identity-service listening on (http:\/\/\S+)[^\n]*\n\d+ workers \(pids ([\d, ]+)\)/,
  });
  const pids = workers === 1 ? [service.pid] : service.ready[2]!.split(",").map(Number);
  return { url: service.ready[1]!, pids, stop: () => service.stop() };
}

/** The largest resident set of the server's processes, in MB. */
export const largestRssMB = (server: OurServer) => (Math.max(...server.pids.map(rssMiB)) * 1024 * 1024) / 1e6;

async function call(url: string, params: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": FORM, ...clientAuth() }, body: new URLSearchParams(params) });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** `count` client_credentials access tokens (RS256 JWTs), the first checked active by introspection. */
export async function clientTokens(server: OurServer, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) tokens.push(String((await call(server.url + TOKEN_PATH, { grant_type: "client_credentials" })).access_token));
  const result = await call(server.url + INTROSPECT_PATH, { token: tokens[0]! });
  if (result.active !== true) throw new Error(`token not active: ${JSON.stringify(result)}`);
  return tokens;
}

/** `count` access tokens of the bench user (password grant: one scrypt each, so keep it small). */
export async function userTokens(server: OurServer, count: number): Promise<string[]> {
  const grant = { grant_type: "password", username: BENCH_USER.name, password: BENCH_USER.password, scope: "openid profile email phone" };
  return Promise.all(Array.from({ length: count }, async () => String((await call(server.url + TOKEN_PATH, grant)).access_token)));
}

/**
 * Put `count` live access-token rows straight into a new database file
 * (schema from the migrations), as if that many tokens had been issued:
 * random hashes, so the index has the shape real SHA-256 keys give it.
 */
export async function seedStoredTokens(file: string, count: number): Promise<void> {
  // A batch of 20,000 rows takes seconds on a busy machine: past the default per-call deadline.
  const db = await openDb({ url: file, queryTimeoutMs: 600_000 });
  try {
    const now = Date.now();
    for (let done = 0; done < count; done += 20_000) {
      await db.raw(
        `with recursive seq(n) as (select 1 union all select n + 1 from seq where n < ?)
         insert into access_tokens (token_hash, jti, family_id, client_id, user_id, scope, issued_at, expires_at, revoked_at)
         select substr(hex(randomblob(32)), 1, 43), lower(hex(randomblob(16))), lower(hex(randomblob(16))), ?, null, '', ?, ?, null from seq`,
        [Math.min(20_000, count - done), clientId("RS256"), now, now + 24 * 3600_000],
      );
    }
    await db.raw("pragma wal_checkpoint(truncate)");
  } finally {
    await db.destroy();
  }
}
