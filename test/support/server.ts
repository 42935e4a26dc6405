import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../src/clock.js";
import type { ServeConfig } from "../../src/config.js";
import { silentLogger, type Logger } from "../../src/log.js";
import { startServer, type RunningServer } from "../../src/server.js";

/** The application and user every end-to-end test can rely on. */
export const TEST_APP = {
  name: "app1",
  clientId: "client-1",
  clientSecret: "secret-1",
  redirectUris: ["http://127.0.0.1:9999/callback"],
  grantTypes: ["authorization_code", "implicit", "password", "client_credentials", "refresh_token"],
  expireInHours: 1,
  refreshExpireInHours: 0,
};

/** An application that may only use client_credentials, with 2-hour tokens. */
export const CC_ONLY_APP = { name: "cc-only", clientId: "client-cc", clientSecret: "secret-cc", grantTypes: ["client_credentials"], expireInHours: 2 };

/** An application with no grant but the always-on authorization_code. */
export const CODE_ONLY_APP = { name: "code-only", clientId: "client-code", clientSecret: "secret-code", grantTypes: [] };

export const TEST_USER = {
  name: "alice",
  password: "pw-alice-123",
  displayName: "Alice",
  email: "alice@example.com",
  avatar: "https://example.com/a.png",
  phone: "+15550100",
  address: "1 Main St, Springfield",
};

export const ADMIN_TOKEN = "test-admin-token";

export interface TestServerOptions {
  /** Replaces the default config file contents ({applications:[TEST_APP], users:[TEST_USER]}). */
  config?: Record<string, unknown>;
  clock?: Clock;
  database?: string;
  overrides?: Partial<ServeConfig>;
  /** Where the server's log lines go (default: nowhere). */
  logger?: Logger;
}

/** Write a config file to a fresh temporary folder and return its path. */
export function writeConfigFile(config: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), "identity-test-")), "config.json");
  writeFileSync(path, JSON.stringify(config));
  return path;
}

/** The real server on 127.0.0.1, a random port and an in-memory database. */
export function startTestServer(options: TestServerOptions = {}): Promise<RunningServer> {
  const config = options.config ?? { applications: [TEST_APP], users: [TEST_USER] };
  return startServer(
    {
      port: 0,
      host: "127.0.0.1",
      database: options.database ?? ":memory:",
      configFile: writeConfigFile(config),
      adminToken: ADMIN_TOKEN,
      maxBodyBytes: 65536,
      refreshReuseGraceSeconds: 0,
      loginMaxFailures: 5,
      loginLockoutSeconds: 300,
      sessionTtlSeconds: 28800,
      codeTtlSeconds: 300,
      ...options.overrides,
    },
    { clock: options.clock, logger: options.logger ?? silentLogger },
  );
}

/** POST a form to the server and return status, headers and parsed JSON. */
export async function postForm(
  url: string,
  params: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params).toString(),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

export function basicAuth(clientId: string, clientSecret: string): string {
  const enc = (s: string) => encodeURIComponent(s);
  return "Basic " + Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString("base64");
}
