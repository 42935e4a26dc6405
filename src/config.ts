import { parseArgs } from "node:util";
import { DEFAULT_KEY_ACTIVATION_DELAY_MS } from "./oauth/keys.js";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where /metrics is served: not at all, on the main port, or on its own port. */
export type MetricsMode = "off" | "same" | { port: number };

/** What the operations options are when unset (SERVE_OPTIONS shows the same values). */
export const OPS_DEFAULTS = {
  metrics: "same" as MetricsMode,
  logLevel: "info" as LogLevel,
  logPretty: false,
  shutdownTimeoutSeconds: 10,
};

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
  // Unset means the default in OPS_DEFAULTS / SERVE_OPTIONS.
  metrics?: MetricsMode;
  logLevel?: LogLevel;
  logPretty?: boolean;
  shutdownTimeoutSeconds?: number;
  keyActivationDelaySeconds?: number;
}

interface OptionSpec {
  key: keyof ServeConfig;
  flag: string;
  env: string;
  default: string;
  description: string;
  parse: (raw: string) => unknown;
  /** A flag that takes no value; its variable reads true/false. */
  boolean?: true;
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
const atLeast = (min: number) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`must be a whole number of at least ${min}: ${raw}`);
  return n;
};
const text = (raw: string) => raw;
const url = (raw: string) => {
  const parsed = new URL(raw);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`issuer must be http(s): ${raw}`);
  return raw.replace(/\/+$/, "");
};
const bool = (raw: string) => {
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new Error(`expected true or false: ${raw}`);
};
const logLevel = (raw: string) => {
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) throw new Error(`expected one of ${LOG_LEVELS.join(", ")}: ${raw}`);
  return raw;
};
const metricsMode = (raw: string): MetricsMode => (raw === "off" || raw === "same" ? raw : { port: port(raw) });

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
    key: "metrics", flag: "metrics", env: "IDENTITY_METRICS", default: String(OPS_DEFAULTS.metrics),
    description: "Prometheus `/metrics`: `off`, `same` (on the main port) or a port number of its own (0 picks a free one)",
    parse: metricsMode,
  },
  {
    key: "logLevel", flag: "log-level", env: "LOG_LEVEL", default: OPS_DEFAULTS.logLevel,
    description: `least severe log level written: ${LOG_LEVELS.join(", ")}`, parse: logLevel,
  },
  {
    key: "logPretty", flag: "log-pretty", env: "IDENTITY_LOG_PRETTY", default: String(OPS_DEFAULTS.logPretty),
    description: "human-friendly colored logs instead of JSON lines (development)", parse: bool, boolean: true,
  },
  {
    key: "shutdownTimeoutSeconds", flag: "shutdown-timeout-seconds", env: "IDENTITY_SHUTDOWN_TIMEOUT_SECONDS",
    default: String(OPS_DEFAULTS.shutdownTimeoutSeconds),
    description: "on SIGTERM/SIGINT, how long in-flight requests may take before their connections are cut", parse: atLeast(0),
  },
  {
    key: "keyActivationDelaySeconds", flag: "key-activation-delay-seconds", env: "IDENTITY_KEY_ACTIVATION_DELAY_SECONDS",
    default: String(DEFAULT_KEY_ACTIVATION_DELAY_MS / 1000),
    description: "a key made by `identity keys rotate` (which reads this option too) or the RotateKey RPC is published at once and signs only after this delay",
    parse: atLeast(0),
  },
];

/** One option's value from its flag's raw value, else its variable, else its default. */
function optionValue(option: OptionSpec, flagValue: string | boolean | undefined, env: NodeJS.ProcessEnv): unknown {
  const raw = (typeof flagValue === "boolean" ? String(flagValue) : flagValue) ?? env[option.env] ?? option.default;
  if (raw === "" || raw.includes("<")) return undefined;
  try {
    return option.parse(raw);
  } catch (err) {
    throw new Error(`--${option.flag} / ${option.env}: ${(err as Error).message}`);
  }
}

/** Flags beat environment variables, which beat defaults. */
export function parseServeConfig(args: string[], env: NodeJS.ProcessEnv): ServeConfig {
  const { values } = parseArgs({
    args,
    options: Object.fromEntries(SERVE_OPTIONS.map((o) => [o.flag, { type: o.boolean ? ("boolean" as const) : ("string" as const) }])),
    strict: true,
    allowPositionals: false,
  });
  const config: Record<string, unknown> = {};
  for (const option of SERVE_OPTIONS) {
    const value = optionValue(option, values[option.flag], env);
    if (value !== undefined) config[option.key] = value;
  }
  return config as unknown as ServeConfig;
}

/** A single serve option as an admin command sees it: its flag's value, else its variable, else its default. */
export function resolveServeOption<K extends keyof ServeConfig>(key: K, flagValue: string | undefined, env: NodeJS.ProcessEnv): ServeConfig[K] {
  const option = SERVE_OPTIONS.find((o) => o.key === key)!;
  return optionValue(option, flagValue, env) as ServeConfig[K];
}

/** The options as a Markdown table: the README's reference and `identity serve --help`. */
export function optionsTable(): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|");
  const rows = SERVE_OPTIONS.map(
    (o) => `| \`--${o.flag}\` | \`${o.env}\` | ${o.default ? `\`${cell(o.default)}\`` : "(none)"} | ${cell(o.description)} |`,
  );
  return ["| Flag | Environment variable | Default | Meaning |", "|---|---|---|---|", ...rows].join("\n") + "\n";
}
