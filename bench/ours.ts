import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDb } from "../src/store/db.js";
import { rssMiB, startService, type Service } from "./processes.js";

/** The application and user the suite seeds through the config file. */
export const BENCH_APP = {
  name: "bench",
  clientId: "bench-client",
  clientSecret: "bench-secret-0123456789abcdef",
  grantTypes: ["client_credentials", "password"],
  expireInHours: 24,
};
export const BENCH_USER = {
  name: "bench-user",
  password: "bench-password-0123",
  displayName: "Bench User",
  email: "bench@example.com",
  emailVerified: true,
  phone: "+15550100",
  address: "1 Main St",
};

export const TOKEN_PATH = "/api/login/oauth/access_token";
export const INTROSPECT_PATH = "/api/login/oauth/introspect";
export const USERINFO_PATH = "/api/userinfo";

export const basicAuth = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
export const BENCH_BASIC = basicAuth(BENCH_APP.clientId, BENCH_APP.clientSecret);
export const FORM = "application/x-www-form-urlencoded";

export interface OurServer {
  url: string;
  /** Every instance's process (one, or the cluster's workers). */
  pids: number[];
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Folder for the database, config and log files. */
  dir: string;
  /** Distinguishes this server's files from the others'. */
  name: string;
  workers: number;
  env?: NodeJS.ProcessEnv;
  /** Extra node flags for a single instance (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** The built entry point (default dist/src/main.js), e.g. a copy of an older build to compare with. */
  entry?: string;
}

export function databaseFile(options: Pick<StartOptions, "dir" | "name">): string {
  return join(options.dir, `${options.name}.sqlite`);
}

/**
 * The built server (`dist/src/main.js serve`) on a temporary SQLite file
 * with production settings: NODE_ENV=production and every default. With
 * `workers` > 1, `serve --workers`: a node:cluster of that many processes on one port.
 */
export async function startOurs(options: StartOptions): Promise<OurServer> {
  const configFile = join(options.dir, "config.json");
  writeFileSync(configFile, JSON.stringify({ applications: [BENCH_APP], users: [BENCH_USER] }));
  const logFile = join(options.dir, `${options.name}.log`);
  const serveArgs = ["--port", "0", "--host", "127.0.0.1", "--database", databaseFile(options), "--config", configFile];
  const env = { NODE_ENV: "production", ...options.env };
  let service: Service;
  let pids: (service: Service) => number[];
  if (options.workers === 1) {
    service = await startService({
      name: `server ${options.name}`,
      args: [...(options.nodeArgs ?? []), options.entry ?? "dist/src/main.js", "serve", ...serveArgs],
      env,
      logFile,
      ready: /identity-service listening on (http:\/\/\S+)/,
    });
    pids = (s) => [s.pid];
  } else {
    // `serve --workers N`: node:cluster, N processes on one port; the primary prints the banner once.
    service = await startService({
      name: `cluster ${options.name}`,
      args: [options.entry ?? "dist/src/main.js", "serve", "--workers", String(options.workers), ...serveArgs],
      env,
      logFile,
      ready: /identity-service listening on (http:\/\/\S+)[^\n]*\n\d+ workers \(pids ([\d, ]+)\)/,
    });
    pids = (s) => s.ready[2]!.split(",").map(Number);
  }
  const url = service.ready[1]!;
  return { url, pids: pids(service), stop: () => service.stop() };
}

/** The largest resident set of the server's instances, in MiB. */
export function largestRss(server: OurServer): number {
  return Math.max(...server.pids.map(rssMiB));
}

async function post(url: string, body: Record<string, string>, authorization?: string): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": FORM, ...(authorization ? { authorization } : {}) },
    body: new URLSearchParams(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** `count` client_credentials access tokens. */
export async function clientTokens(server: OurServer, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    tokens.push(String((await post(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, BENCH_BASIC)).access_token));
  }
  return tokens;
}

/** `count` access tokens of the bench user (password grant: one scrypt each, so keep it small). */
export async function userTokens(server: OurServer, count: number): Promise<string[]> {
  const grant = { grant_type: "password", username: BENCH_USER.name, password: BENCH_USER.password, scope: "openid profile email phone" };
  return Promise.all(Array.from({ length: count }, async () => String((await post(server.url + TOKEN_PATH, grant, BENCH_BASIC)).access_token)));
}

/** Whether introspection calls a token active: checked before a token enters a load run. */
export async function assertActive(server: OurServer, token: string): Promise<void> {
  const result = await post(server.url + INTROSPECT_PATH, { token }, BENCH_BASIC);
  if (result.active !== true) throw new Error(`token not active: ${JSON.stringify(result)}`);
}

const SEED_BATCH = 100_000;

/**
 * Put `count` live access-token rows straight into a new database file
 * (schema from the migrations), as if that many tokens had been issued:
 * random hashes, so the index has the shape real SHA-256 keys give it.
 */
export async function seedStoredTokens(file: string, count: number): Promise<void> {
  const db = await openDb({ url: file });
  try {
    const now = Date.now();
    await db.raw("pragma cache_size = -262144");
    for (let done = 0; done < count; done += SEED_BATCH) {
      const rows = Math.min(SEED_BATCH, count - done);
      await db.raw(
        `with recursive seq(n) as (select 1 union all select n + 1 from seq where n < ?)
         insert into access_tokens (token_hash, jti, family_id, client_id, user_id, scope, issued_at, expires_at, revoked_at)
         select substr(hex(randomblob(32)), 1, 43), lower(hex(randomblob(16))), lower(hex(randomblob(16))), ?, null, '', ?, ?, null from seq`,
        [rows, BENCH_APP.clientId, now, now + 24 * 3600_000],
      );
    }
    await db.raw("pragma wal_checkpoint(truncate)");
  } finally {
    await db.destroy();
  }
}
