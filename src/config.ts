import { parseArgs } from "node:util";
import { MAX_CODE_TTL_SECONDS } from "./oauth/codes.js";

/** The typed configuration of `identity serve`. */
export interface ServeConfig {
  port: number;
  host: string;
  database: string;
  /** Undefined means `http://localhost:<port>`, known once listening. */
  issuer?: string;
  configFile?: string;
  adminToken?: string;
  maxBodyBytes: number;
  /** Failed sign-ins of one user name that trigger a lockout; 0 turns it off. */
  loginMaxFailures: number;
  /** Length of the lockout, and the window in which failures are counted. */
  loginLockoutSeconds: number;
  sessionTtlSeconds: number;
  codeTtlSeconds: number;
}

interface OptionSpec {
  key: keyof ServeConfig;
  flag: string;
  env: string;
  default: string;
  description: string;
  parse: (raw: string) => unknown;
}

const port = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`invalid port: ${raw}`);
  return n;
};
const positiveInt = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`invalid number: ${raw}`);
  return n;
};
const nonNegativeInt = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`invalid number: ${raw}`);
  return n;
};
const secondsUpTo = (max: number) => (raw: string) => {
  const n = positiveInt(raw);
  if (n > max) throw new Error(`at most ${max} seconds: ${raw}`);
  return n;
};
const text = (raw: string) => raw;
const url = (raw: string) => {
  const parsed = new URL(raw);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`issuer must be http(s): ${raw}`);
  return raw.replace(/\/+$/, "");
};

/**
 * Every option, once: flag, environment variable, default and meaning. The
 * parser, the `--help` text and the README table all come from this list.
 */
export const SERVE_OPTIONS: readonly OptionSpec[] = [
  { key: "port", flag: "port", env: "PORT", default: "8000", description: "TCP port; 0 picks a free one and prints it", parse: port },
  { key: "host", flag: "host", env: "HOST", default: "127.0.0.1", description: "address to listen on", parse: text },
  {
    key: "database", flag: "database", env: "DATABASE_URL", default: "./data/identity.sqlite",
    description: "SQLite file path, `:memory:`, or a `postgres://` URL", parse: text,
  },
  {
    key: "issuer", flag: "issuer", env: "IDENTITY_ISSUER", default: "http://localhost:<port>",
    description: "issuer URL: the `iss` of every token and the base of discovery", parse: url,
  },
  {
    key: "configFile", flag: "config", env: "IDENTITY_CONFIG", default: "",
    description: "JSON file of applications, users and providers, applied at every start", parse: text,
  },
  {
    key: "adminToken", flag: "admin-token", env: "IDENTITY_ADMIN_TOKEN", default: "",
    description: "bearer token for the admin RPCs; unset keeps them closed", parse: text,
  },
  {
    key: "maxBodyBytes", flag: "max-body-bytes", env: "IDENTITY_MAX_BODY_BYTES", default: "65536",
    description: "largest accepted REST request body, in bytes", parse: positiveInt,
  },
  {
    key: "loginMaxFailures", flag: "login-max-failures", env: "IDENTITY_LOGIN_MAX_FAILURES", default: "5",
    description: "failed sign-ins of one user name (form or password grant) that lock it; 0 = never lock", parse: nonNegativeInt,
  },
  {
    key: "loginLockoutSeconds", flag: "login-lockout-seconds", env: "IDENTITY_LOGIN_LOCKOUT_SECONDS", default: "300",
    description: "how long a lockout lasts, and the window in which failures are counted", parse: positiveInt,
  },
  {
    key: "sessionTtlSeconds", flag: "session-ttl-seconds", env: "IDENTITY_SESSION_TTL_SECONDS", default: "28800",
    description: "lifetime of a browser sign-in session", parse: positiveInt,
  },
  {
    key: "codeTtlSeconds", flag: "code-ttl-seconds", env: "IDENTITY_CODE_TTL_SECONDS", default: "300",
    description: "lifetime of an authorization code (at most 600)", parse: secondsUpTo(MAX_CODE_TTL_SECONDS),
  },
];

/** Flags beat environment variables, which beat defaults. */
export function parseServeConfig(args: string[], env: NodeJS.ProcessEnv): ServeConfig {
  const { values } = parseArgs({
    args,
    options: Object.fromEntries(SERVE_OPTIONS.map((o) => [o.flag, { type: "string" as const }])),
    strict: true,
    allowPositionals: false,
  });
  const config: Record<string, unknown> = {};
  for (const option of SERVE_OPTIONS) {
    const raw = (values[option.flag] as string | undefined) ?? env[option.env] ?? option.default;
    if (raw === "" || raw.includes("<")) continue;
    try {
      config[option.key] = option.parse(raw);
    } catch (err) {
      throw new Error(`--${option.flag} / ${option.env}: ${(err as Error).message}`);
    }
  }
  return config as unknown as ServeConfig;
}
