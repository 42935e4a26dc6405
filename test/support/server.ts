import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../src/shared/clock.js";
import type { ServeConfig } from "../../src/app/config.js";
import { silentLogger, type Logger } from "../../src/shared/log.js";
import { generateSigningKeyPair, type KeyPairGenerator } from "../../src/oauth/keys.js";
import type { ScryptCost } from "../../src/oauth/secrets.js";
import { startServer, type RunningServer } from "../../src/app/server.js";
import { TokenMinter } from "../../src/oauth/tokens.js";
import { freshTestDatabase } from "./databases.js";
import type { MailPolicy } from "../../src/accounts/mailer.js";
import type { BackchannelLogoutOptions } from "../../src/oauth/backchannelLogout.js";
import { DEFAULT_QUERY_TIMEOUT_MS } from "../../src/store/deadlines.js";
import { scaledMs } from "./deadline.js";

/** The application and user every end-to-end test can rely on. */
export const TEST_APP = {
  name: "app1",
  clientId: "client-1",
  clientSecret: "secret-1-of-client-1",
  redirectUris: ["http://127.0.0.1:9999/callback"],
  grantTypes: ["authorization_code", "implicit", "password", "client_credentials", "refresh_token"],
  expireInHours: 1,
  refreshExpireInHours: 0,
};

/** An application that may only use client_credentials, with 2-hour tokens. */
export const CC_ONLY_APP = { name: "cc-only", clientId: "client-cc", clientSecret: "secret-cc-of-client-cc", grantTypes: ["client_credentials"], expireInHours: 2 };

/** An application with no grant but the always-on authorization_code. */
export const CODE_ONLY_APP = { name: "code-only", clientId: "client-code", clientSecret: "secret-code-of-client-code", grantTypes: [] };

/** A Custom login provider on an unreachable host: enough for pages and redirects, never called. */
export const TEST_PROVIDER = {
  name: "acme",
  type: "Custom",
  displayName: "Acme",
  clientId: "acme-client",
  clientSecret: "acme-secret",
  authUrl: "https://id.acme.example/authorize",
  scope: "openid",
  tokenUrl: "https://id.acme.example/token",
  userInfoUrl: "https://id.acme.example/userinfo",
  favicon: "https://id.acme.example/favicon.ico",
};

export const TEST_USER = {
  name: "alice",
  password: "pw-alice-123",
  displayName: "Alice",
  email: "alice@example.com",
  avatar: "https://example.com/a.png",
  phone: "+15550100",
  address: "1 Main St, Springfield",
};

export const ADMIN_TOKEN = "test-admin-token-0123456789abcdef"; // at least 32 characters, as the server requires

export interface TestServerOptions {
  /** Replaces the default config file contents ({applications:[TEST_APP], users:[TEST_USER]}). */
  config?: Record<string, unknown>;
  clock?: Clock;
  database?: string;
  overrides?: Partial<ServeConfig>;
  logger?: Logger;
  /** How hard each mail is tried (tests of failures shorten the pauses). */
  mailPolicy?: MailPolicy;
  /** Back-channel logout's polling and retry pauses (tests shorten them). */
  backchannelLogout?: Partial<BackchannelLogoutOptions>;
}

/** A logger that keeps every line, for tests of what is (not) logged. */
export class RecordingLogger implements Logger {
  readonly lines: { level: "debug" | "info" | "warn" | "error"; message: string; fields?: Record<string, unknown> }[] = [];
  debug(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: "debug", message, fields });
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: "info", message, fields });
  }
  infoPlain(message: string, fields: Record<string, unknown>): void {
    this.info(message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: "warn", message, fields });
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: "error", message, fields });
  }
  enabled(): boolean {
    return true;
  }
  /** Everything logged, as one searchable string. */
  text(): string {
    return this.lines.map((l) => JSON.stringify(l)).join("\n");
  }
}

/** Write a config file to a fresh temporary folder and return its path. */
export function writeConfigFile(config: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), "identity-test-")), "config.json");
  writeFileSync(path, JSON.stringify(config));
  return path;
}

// The real service's two deliberately slow steps, made cheap for tests; what
// they produce is used exactly as in production.
// 1. scrypt at N=2^10 instead of 2^15 for the passwords and secrets a test
//    server stores. Each hash records its cost and verification follows it;
//    the default cost has its own test (test/oauth/secrets.spec.ts).
export const TEST_SECRET_HASH_COST: ScryptCost = { N: 1024, r: 8, p: 1 };
// 2. RSA key generation: the first key of every new test database is one
//    pair per test process. Rotations after the start still make new ones.
let sharedFirstKeyPair: ReturnType<KeyPairGenerator> | undefined;

/**
 * The real server on 127.0.0.1 and a random port, on `options.database` or
 * else a fresh database of its own: `:memory:`, or under
 * IDENTITY_TEST_DATABASE=postgres a PostgreSQL schema dropped once it closes.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<RunningServer> {
  if (options.database !== undefined) return startTestServerOn(options.database, options);
  const fresh = freshTestDatabase();
  let server: RunningServer;
  try {
    server = await startTestServerOn(fresh.url, options);
  } catch (err) {
    await fresh.dispose();
    throw err;
  }
  const close = server.close;
  return {
    ...server,
    async close() {
      try {
        await close();
      } finally {
        await fresh.dispose();
      }
    },
  };
}

async function startTestServerOn(database: string, options: TestServerOptions): Promise<RunningServer> {
  const config = options.config ?? { applications: [TEST_APP], users: [TEST_USER] };
  // Only a new database's first key is made while the server starts.
  let starting = true;
  const generateKeyPair: KeyPairGenerator = (alg) =>
    starting && alg === "RS256" ? (sharedFirstKeyPair ??= generateSigningKeyPair(alg)) : generateSigningKeyPair(alg);
  const server = await startServer(
    {
      port: 0,
      host: "127.0.0.1",
      database,
      configFile: writeConfigFile(config),
      adminToken: ADMIN_TOKEN,
      maxBodyBytes: 65536,
      refreshReuseGraceSeconds: 0,
      loginMaxFailures: 5,
      loginLockoutSeconds: 300,
      sessionTtlSeconds: 28800,
      codeTtlSeconds: 300,
      // Queries queue for SQLite's one connection, and on a loaded machine they queue longer: a burst of
      // requests must not meet the deadline because the CPU is shared. Tests of the deadline set their own.
      dbQueryTimeoutMs: scaledMs(DEFAULT_QUERY_TIMEOUT_MS),
      ...options.overrides,
    },
    { clock: options.clock, logger: options.logger ?? silentLogger, generateKeyPair, secretHashCost: TEST_SECRET_HASH_COST, mailPolicy: options.mailPolicy, backchannelLogout: options.backchannelLogout },
  );
  starting = false;
  return server;
}

export interface HttpResult {
  status: number;
  headers: Headers;
  /** The body as sent. */
  text: string;
  body: any;
}

/** Any request, answered as status, headers, text and parsed JSON (undefined for an empty body). */
export async function call(url: string, init: RequestInit = {}): Promise<HttpResult> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

/** POST a form and return status, headers, text and parsed JSON. */
export function postForm(url: string, params: Record<string, string>, headers: Record<string, string> = {}): Promise<HttpResult> {
  return call(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params).toString(),
  });
}

export function basicAuth(clientId: string, clientSecret: string): string {
  const enc = (s: string) => encodeURIComponent(s);
  return "Basic " + Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString("base64");
}

/** A minter over a running server's store and keys, for tests that need tokens of a shape no grant issues. */
export function minterOf(server: RunningServer): TokenMinter {
  return new TokenMinter(server.store, server.domain.keys, server.domain.clock, server.issuer);
}
