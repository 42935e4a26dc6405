import net from "node:net";
import { parseArgs } from "node:util";
import { CLEANUP_DEFAULTS, DEFAULT_AUDIT_RETENTION_DAYS } from "./housekeeping.js";
import { MAX_CODE_TTL_SECONDS } from "./../oauth/codes.js";
import { MIN_DEVICE_CODE_TTL_SECONDS } from "./../oauth/deviceAuthorization.js";
import { DEFAULT_KEY_ACTIVATION_DELAY_MS, DEFAULT_KEY_RELOAD_MS } from "./../oauth/keys.js";
import { DEFAULT_CLIENT_AUTH_POLICY } from "./../oauth/clientThrottle.js";
import { DEFAULT_LOGIN_POLICY } from "./../oauth/loginThrottle.js";
import { DEFAULT_PUSHED_REQUESTS_PER_CLIENT } from "./../oauth/pushedAuthorization.js";
import { isProviderName } from "./../federation/providers.js";
import { MIN_SECRET_KEY_LENGTH } from "./../federation/secretBox.js";
import { DEFAULT_UPSTREAM_TIMEOUT_MS } from "./../federation/upstream.js";
import { POSTGRES_DEFAULTS } from "./../store/db.js";
import { CLIENT_REGISTRATION_MODES, DEFAULT_REGISTRATIONS_PER_HOUR, type ClientRegistrationMode } from "./../accounts/clientRegistration.js";
import { DEFAULT_QUERY_TIMEOUT_MS } from "./../store/deadlines.js";
import { LOG_LEVELS, type LogLevel } from "./../shared/log.js";
import { DPOP_NONCE_MODES, type DPoPNonceMode } from "./../oauth/dpop.js";
import { smtpOptions } from "./../accounts/mailer.js";
import { SELF_SERVICE_DEFAULTS } from "./../accounts/selfService.js";

/** Where /metrics is served: not at all, on the main port, or on its own port. */
export type MetricsMode = "off" | "same" | { port: number };

/** What the operations options are when unset (SERVE_OPTIONS shows the same values). */
export const OPS_DEFAULTS = {
  metrics: "same" as MetricsMode,
  logLevel: "info" as LogLevel,
  // A server started in code; `identity serve` decides by its terminal (main.ts).
  logPretty: false,
  shutdownTimeoutSeconds: 10,
};
import { DEFAULT_CONNECTION_LIMITS } from "./../http/transport.js";

/** The typed configuration of `identity serve`. */
export interface ServeConfig {
  port: number;
  host: string;
  database: string;
  /** Undefined means the listening URL printed at start (`http://<host>:<port>`, https with TLS), known once listening. */
  issuer?: string;
  /** PEM certificate chain and private key: the port speaks HTTPS (h2 and http/1.1), files re-read while running. */
  tlsCert?: string;
  tlsKey?: string;
  configFile?: string;
  adminToken?: string;
  maxBodyBytes: number;
  // Unset means the default in SERVE_OPTIONS / OPS_DEFAULTS (code that builds a config need not name them).
  dbPoolMin?: number;
  dbPoolMax?: number;
  dbConnectTimeoutMs?: number;
  dbStatementTimeoutMs?: number;
  /** Deadline of each database call (connection wait and statement), both backends. */
  dbQueryTimeoutMs?: number;
  keyReloadSeconds?: number;
  /** 0 turns the cleanup job off. */
  cleanupIntervalSeconds?: number;
  cleanupBatchSize?: number;
  /** Days audit events are kept; 0 keeps them for ever. */
  auditRetentionDays?: number;
  /** Whether security events are recorded (docs/audit.md). */
  auditEvents?: boolean;
  /** Seconds during which a consumed refresh token presented again does not revoke its family. */
  refreshReuseGraceSeconds?: number;
  /** Failed sign-ins of one user name that trigger a lockout; 0 turns it off. */
  loginMaxFailures?: number;
  /** Length of the lockout, and the window in which failures are counted. */
  loginLockoutSeconds?: number;
  /** Failed sign-ins from one client address that lock it; 0 turns it off. */
  loginMaxFailuresPerIp?: number;
  /** Failed client authentications naming one client_id that lock it; 0 turns it off. */
  clientAuthMaxFailures?: number;
  /** Failed client authentications from one client address that lock it; 0 turns it off. */
  clientAuthMaxFailuresPerIp?: number;
  /** Length of a client lockout, and the window in which its failures are counted. */
  clientAuthLockoutSeconds?: number;
  /** Reverse proxies whose X-Forwarded-For names the client address. */
  trustedProxies?: string[];
  /** Login providers the admin console's sign-in page offers on this instance, instead of the stored list. */
  consoleProviders?: string[];
  sessionTtlSeconds?: number;
  codeTtlSeconds?: number;
  /** How long a device code may be polled (RFC 8628 §3.2 expires_in). */
  deviceCodeTtlSeconds?: number;
  /** Every client's authorize requests must come through PAR (RFC 9126 §5). */
  requirePushedAuthorizationRequests?: boolean;
  /** Live pushed authorization requests one client may hold; beyond, 429. */
  pushedRequestsMaxPerClient?: number;
  /** Encrypts provider client secrets at rest; unset stores them as given. */
  secretKey?: string;
  /** Deadline of each call to an upstream login provider. */
  federationTimeoutMs?: number;
  metrics?: MetricsMode;
  /** Where /metrics listens when it has a port of its own; unset is `host`. */
  metricsHost?: string;
  /** Bearer token /metrics requires; unset leaves it open to whoever reaches it. */
  metricsToken?: string;
  logLevel?: LogLevel;
  logPretty?: boolean;
  shutdownTimeoutSeconds?: number;
  /** Processes serving the one port (node:cluster); 0 means one per core, 1 (the default) no cluster. */
  workers?: number;
  keyActivationDelaySeconds?: number;
  maxHeaderBytes?: number;
  /** Longest wait for a connection's first bytes and for a complete header block. */
  headersTimeoutSeconds?: number;
  /** Who may register clients (RFC 7591): `off`, `token` (bearing registrationToken) or `open`. */
  clientRegistration?: ClientRegistrationMode;
  /** The Bearer token a registration needs under `token`. */
  registrationToken?: string;
  /** Successful registrations per client address per hour. */
  registrationMaxPerHour?: number;
  /** Tests only: client ID metadata documents may be fetched from loopback, over https or http. */
  allowInsecureClientMetadata?: boolean;
  /** Longest a request (HTTP/1.1 or HTTP/2) may take to arrive, body included. */
  requestTimeoutSeconds?: number;
  /** HTTP/2 sessions idle this long are closed. */
  idleTimeoutSeconds?: number;
  /** Where mail goes (a secret: it may hold a password); unset offers nothing that needs mail (issue 47). */
  smtpUrl?: string;
  /** The From of every mail. */
  mailFrom?: string;
  passwordMinLength?: number;
  emailLinkTtlSeconds?: number;
  signupMaxPerHour?: number;
  /** DPoP server nonces (RFC 9449 §8): `off`, `offer` (in answers) or `required` (in every proof). */
  dpopNonce?: DPoPNonceMode;
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
const secondsUpTo = (max: number) => (raw: string) => {
  const n = positiveInt(raw);
  if (n > max) throw new Error(`at most ${max} seconds: ${raw}`);
  return n;
};
const secondsAtLeast = (min: number) => (raw: string) => {
  const n = positiveInt(raw);
  if (n < min) throw new Error(`at least ${min} seconds: ${raw}`);
  return n;
};
const text = (raw: string) => raw;
/** The shortest admin token the server starts with: it opens every admin RPC. */
export const MIN_ADMIN_TOKEN_LENGTH = 32;
const adminToken = (raw: string) => {
  if (raw.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new Error(`must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (for example \`openssl rand -base64 32\`)`);
  }
  return raw;
};
const secretKey = (raw: string) => {
  if (raw.length < MIN_SECRET_KEY_LENGTH) throw new Error(`must be at least ${MIN_SECRET_KEY_LENGTH} characters (for example \`openssl rand -base64 32\`)`);
  return raw;
};
const registrationMode = (raw: string) => {
  if (!(CLIENT_REGISTRATION_MODES as readonly string[]).includes(raw)) throw new Error(`must be one of ${CLIENT_REGISTRATION_MODES.join(", ")}: ${raw}`);
  return raw as ClientRegistrationMode;
};
const dpopNonceMode = (raw: string) => {
  if (!(DPOP_NONCE_MODES as readonly string[]).includes(raw)) throw new Error(`must be one of ${DPOP_NONCE_MODES.join(", ")}: ${raw}`);
  return raw as DPoPNonceMode;
};
const ipList = (raw: string) =>
  raw.split(",").map((entry) => {
    const address = entry.trim();
    if (net.isIP(address) === 0) throw new Error(`not an IP address: ${address}`);
    return address;
  });
const providerNames = (raw: string) =>
  raw.split(",").map((entry) => {
    const name = entry.trim();
    if (!isProviderName(name)) throw new Error(`not a provider name: ${name}`);
    return name;
  });
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
// The URL is checked but never quoted in an error: it may hold a password.
const smtpUrl = (raw: string) => (smtpOptions(raw), raw);
const mailbox = (raw: string) => {
  if (!/^[^\r\n]*@[^\r\n]*$/.test(raw)) throw new Error(`must be an address such as "Identity <no-reply@example.com>": ${raw}`);
  return raw;
};
const metricsMode = (raw: string): MetricsMode => (raw === "off" || raw === "same" ? raw : { port: port(raw) });

/**
 * Every option, once: flag, environment variable, default and meaning. The
 * parser, the `--help` text and the table of docs/configuration.md all come from this list.
 */
export const SERVE_OPTIONS: readonly OptionSpec[] = [
  { key: "port", flag: "port", env: "PORT", default: "8000", description: "TCP port; 0 picks a free one and prints it", parse: port },
  { key: "host", flag: "host", env: "HOST", default: "127.0.0.1", description: "address to listen on", parse: text },
  {
    key: "database", flag: "database", env: "DATABASE_URL", default: "./data/identity.sqlite",
    description: "SQLite file path, `:memory:`, or a `postgres://` URL", parse: text,
  },
  {
    key: "issuer", flag: "issuer", env: "IDENTITY_ISSUER", default: "http://<host>:<port>",
    description:
      "issuer URL: the `iss` of every token and the base of discovery; unset, the listening URL printed at start (https with `--tls-cert`; a loopback address for a wildcard `--host`). Set it to the URL browsers and clients use",
    parse: url,
  },
  {
    key: "tlsCert", flag: "tls-cert", env: "IDENTITY_TLS_CERT", default: "",
    description:
      "PEM certificate chain: with `--tls-key`, the port serves HTTPS (ALPN h2 and http/1.1: gRPC, gRPC-Web, Connect, REST); both files are re-read every few seconds and a changed pair serves new connections",
    parse: text,
  },
  {
    key: "tlsKey", flag: "tls-key", env: "IDENTITY_TLS_KEY", default: "",
    description: "PEM private key of `--tls-cert`", parse: text,
  },
  {
    key: "configFile", flag: "config", env: "IDENTITY_CONFIG", default: "",
    description: "JSON file of applications, users and providers, applied at every start", parse: text,
  },
  {
    key: "adminToken", flag: "admin-token", env: "IDENTITY_ADMIN_TOKEN", default: "",
    description: `bearer token for the admin RPCs, at least ${MIN_ADMIN_TOKEN_LENGTH} characters; unset, only admin users' tokens open them`, parse: adminToken,
  },
  {
    key: "maxBodyBytes", flag: "max-body-bytes", env: "IDENTITY_MAX_BODY_BYTES", default: "65536",
    description: "largest accepted REST request body, in bytes", parse: positiveInt,
  },
  {
    key: "maxHeaderBytes", flag: "max-header-bytes", env: "IDENTITY_MAX_HEADER_BYTES", default: String(DEFAULT_CONNECTION_LIMITS.maxHeaderBytes),
    description: "largest request header block (request line and headers), in bytes; larger is refused with 431", parse: positiveInt,
  },
  {
    key: "headersTimeoutSeconds", flag: "headers-timeout-seconds", env: "IDENTITY_HEADERS_TIMEOUT_SECONDS",
    default: String(DEFAULT_CONNECTION_LIMITS.headersTimeoutMs / 1000),
    description: "longest wait for a connection's first bytes and for a complete header block (slow clients are cut off)", parse: positiveInt,
  },
  {
    key: "requestTimeoutSeconds", flag: "request-timeout-seconds", env: "IDENTITY_REQUEST_TIMEOUT_SECONDS",
    default: String(DEFAULT_CONNECTION_LIMITS.requestTimeoutMs / 1000),
    description:
      "longest a request may take to arrive, body included (at least the headers timeout): HTTP/1.1 from its first byte (408), HTTP/2 from its headers (408, gRPC DEADLINE_EXCEEDED)",
    parse: positiveInt,
  },
  {
    key: "idleTimeoutSeconds", flag: "idle-timeout-seconds", env: "IDENTITY_IDLE_TIMEOUT_SECONDS",
    default: String(DEFAULT_CONNECTION_LIMITS.idleTimeoutMs / 1000),
    description: "an HTTP/2 (gRPC) connection with no traffic for this long is closed", parse: positiveInt,
  },
  {
    key: "dbPoolMin", flag: "db-pool-min", env: "IDENTITY_DB_POOL_MIN", default: String(POSTGRES_DEFAULTS.poolMin),
    description: "PostgreSQL connections each instance keeps open when idle", parse: atLeast(0),
  },
  {
    key: "dbPoolMax", flag: "db-pool-max", env: "IDENTITY_DB_POOL_MAX", default: String(POSTGRES_DEFAULTS.poolMax),
    description: "most PostgreSQL connections per instance (at least 2)", parse: atLeast(2),
  },
  {
    key: "dbConnectTimeoutMs", flag: "db-connect-timeout-ms", env: "IDENTITY_DB_CONNECT_TIMEOUT_MS",
    default: String(POSTGRES_DEFAULTS.connectTimeoutMs),
    description: "longest wait for a PostgreSQL connection before answering 503", parse: positiveInt,
  },
  {
    key: "dbStatementTimeoutMs", flag: "db-statement-timeout-ms", env: "IDENTITY_DB_STATEMENT_TIMEOUT_MS",
    default: String(POSTGRES_DEFAULTS.statementTimeoutMs),
    description: "PostgreSQL statement_timeout for every query", parse: positiveInt,
  },
  {
    key: "dbQueryTimeoutMs", flag: "db-query-timeout-ms", env: "IDENTITY_DB_QUERY_TIMEOUT_MS",
    default: String(DEFAULT_QUERY_TIMEOUT_MS),
    description:
      "deadline of each database call, waiting for a connection included, enforced by the service (a silent network, another process's SQLite lock): past it the request gets 503 and a PostgreSQL connection is dropped",
    parse: positiveInt,
  },
  {
    key: "keyReloadSeconds", flag: "key-reload-seconds", env: "IDENTITY_KEY_RELOAD_SECONDS",
    default: String(DEFAULT_KEY_RELOAD_MS / 1000),
    description: "how often an instance re-reads the shared signing keys: the bound on a rotation reaching it", parse: atLeast(0),
  },
  {
    key: "cleanupIntervalSeconds", flag: "cleanup-interval-seconds", env: "IDENTITY_CLEANUP_INTERVAL_SECONDS",
    default: String(CLEANUP_DEFAULTS.intervalMs / 1000),
    description: "pause between runs of the expired-row cleanup; 0 turns it off", parse: atLeast(0),
  },
  {
    key: "cleanupBatchSize", flag: "cleanup-batch-size", env: "IDENTITY_CLEANUP_BATCH_SIZE",
    default: String(CLEANUP_DEFAULTS.batchSize),
    description: `rows per cleanup DELETE (at most ${CLEANUP_DEFAULTS.maxBatches} per table per run)`, parse: positiveInt,
  },
  {
    key: "auditEvents", flag: "audit-events", env: "IDENTITY_AUDIT_EVENTS", default: "true",
    description: "record security events (sign-ins, lockouts, tokens issued and revoked, admin changes) in the database and as JSON log lines (docs/audit.md); false records none",
    parse: bool,
  },
  {
    key: "auditRetentionDays", flag: "audit-retention-days", env: "IDENTITY_AUDIT_RETENTION_DAYS", default: String(DEFAULT_AUDIT_RETENTION_DAYS),
    description: "days audit events are kept before the cleanup job deletes them; 0 keeps them for ever", parse: atLeast(0),
  },
  {
    key: "refreshReuseGraceSeconds", flag: "refresh-reuse-grace-seconds", env: "IDENTITY_REFRESH_REUSE_GRACE_SECONDS",
    default: "0",
    description: "seconds after a refresh during which presenting the used refresh token again is refused without revoking its family",
    parse: atLeast(0),
  },
  {
    key: "loginMaxFailures", flag: "login-max-failures", env: "IDENTITY_LOGIN_MAX_FAILURES", default: String(DEFAULT_LOGIN_POLICY.maxFailures),
    description: "failed sign-ins of one user name (form or password grant) that lock it; 0 = never lock", parse: atLeast(0),
  },
  {
    key: "loginMaxFailuresPerIp", flag: "login-max-failures-per-ip", env: "IDENTITY_LOGIN_MAX_FAILURES_PER_IP",
    default: String(DEFAULT_LOGIN_POLICY.maxFailuresPerAddress),
    description: "failed sign-ins from one client address (form or password grant) that lock it; 0 = never lock", parse: atLeast(0),
  },
  {
    key: "trustedProxies", flag: "trusted-proxies", env: "IDENTITY_TRUSTED_PROXIES", default: "",
    description: "comma-separated IP addresses of reverse proxies whose X-Forwarded-For names the client; none by default", parse: ipList,
  },
  {
    key: "consoleProviders", flag: "console-providers", env: "IDENTITY_CONSOLE_PROVIDERS", default: "",
    description: "comma-separated names of login providers the admin console's sign-in page offers beside the password on this instance, overriding the stored list that admins change on its Settings page; unset, the stored list",
    parse: providerNames,
  },
  {
    key: "loginLockoutSeconds", flag: "login-lockout-seconds", env: "IDENTITY_LOGIN_LOCKOUT_SECONDS", default: String(DEFAULT_LOGIN_POLICY.lockoutSeconds),
    description: "how long a lockout lasts, and the window in which failures are counted", parse: positiveInt,
  },
  {
    key: "clientAuthMaxFailures", flag: "client-auth-max-failures", env: "IDENTITY_CLIENT_AUTH_MAX_FAILURES",
    default: String(DEFAULT_CLIENT_AUTH_POLICY.maxFailures),
    description: "failed scrypt checks of a chosen client secret naming one client_id that lock it for them (generated secrets are never locked); 0 = never lock",
    parse: atLeast(0),
  },
  {
    key: "clientAuthMaxFailuresPerIp", flag: "client-auth-max-failures-per-ip", env: "IDENTITY_CLIENT_AUTH_MAX_FAILURES_PER_IP",
    default: String(DEFAULT_CLIENT_AUTH_POLICY.maxFailuresPerAddress),
    description: "failed scrypt checks of chosen client secrets from one client address that lock it for them; 0 = never lock", parse: atLeast(0),
  },
  {
    key: "clientAuthLockoutSeconds", flag: "client-auth-lockout-seconds", env: "IDENTITY_CLIENT_AUTH_LOCKOUT_SECONDS",
    default: String(DEFAULT_CLIENT_AUTH_POLICY.lockoutSeconds),
    description: "how long a client lockout lasts, and the window in which those failures are counted", parse: positiveInt,
  },
  {
    key: "sessionTtlSeconds", flag: "session-ttl-seconds", env: "IDENTITY_SESSION_TTL_SECONDS", default: "28800",
    description: "lifetime of a browser sign-in session", parse: positiveInt,
  },
  {
    key: "codeTtlSeconds", flag: "code-ttl-seconds", env: "IDENTITY_CODE_TTL_SECONDS", default: "300",
    description: "lifetime of an authorization code (at most 600)", parse: secondsUpTo(MAX_CODE_TTL_SECONDS),
  },
  {
    key: "deviceCodeTtlSeconds", flag: "device-code-ttl-seconds", env: "IDENTITY_DEVICE_CODE_TTL_SECONDS", default: "600",
    description: "lifetime of a device code (RFC 8628; at least 10)", parse: secondsAtLeast(MIN_DEVICE_CODE_TTL_SECONDS),
  },
  {
    key: "requirePushedAuthorizationRequests", flag: "require-pushed-authorization-requests", env: "IDENTITY_REQUIRE_PUSHED_AUTHORIZATION_REQUESTS",
    default: "false",
    description: "refuse every authorize request that does not come through the pushed authorization request endpoint (RFC 9126; docs/high-assurance.md)",
    parse: bool, boolean: true,
  },
  {
    key: "pushedRequestsMaxPerClient", flag: "pushed-requests-max-per-client", env: "IDENTITY_PUSHED_REQUESTS_MAX_PER_CLIENT",
    default: String(DEFAULT_PUSHED_REQUESTS_PER_CLIENT),
    description: "live (unused, unexpired) pushed authorization requests one client may hold; beyond, 429 `temporarily_unavailable` (RFC 9126 §2.3)", parse: positiveInt,
  },
  {
    key: "secretKey", flag: "secret-key", env: "IDENTITY_SECRET_KEY", default: "",
    description: "key that encrypts provider client secrets at rest (AES-256-GCM); unset stores them unencrypted", parse: secretKey,
  },
  {
    key: "federationTimeoutMs", flag: "federation-timeout-ms", env: "IDENTITY_FEDERATION_TIMEOUT_MS",
    default: String(DEFAULT_UPSTREAM_TIMEOUT_MS),
    description: "longest wait for each call to an upstream login provider", parse: positiveInt,
  },
  {
    key: "clientRegistration", flag: "client-registration", env: "IDENTITY_CLIENT_REGISTRATION", default: "off",
    description: "dynamic client registration (RFC 7591) at /api/oauth/register: `off`, `token` (needs --registration-token as a Bearer token) or `open`",
    parse: registrationMode,
  },
  {
    key: "dpopNonce", flag: "dpop-nonce", env: "IDENTITY_DPOP_NONCE", default: "off",
    description: "DPoP server nonces (RFC 9449 §8): `off`, `offer` (answers to DPoP requests carry a DPoP-Nonce) or `required` (every proof must carry a fresh one)",
    parse: dpopNonceMode,
  },
  {
    key: "registrationToken", flag: "registration-token", env: "IDENTITY_REGISTRATION_TOKEN", default: "",
    description: `the Bearer token registrations need under --client-registration token, at least ${MIN_ADMIN_TOKEN_LENGTH} characters`, parse: adminToken,
  },
  {
    key: "registrationMaxPerHour", flag: "registration-max-per-hour", env: "IDENTITY_REGISTRATION_MAX_PER_HOUR", default: String(DEFAULT_REGISTRATIONS_PER_HOUR),
    description: "successful client registrations per client address (as --trusted-proxies sees it) per hour; beyond, 429", parse: positiveInt,
  },
  {
    key: "allowInsecureClientMetadata", flag: "allow-insecure-client-metadata", env: "IDENTITY_ALLOW_INSECURE_CLIENT_METADATA", default: "false",
    description: "tests only: fetch client ID metadata documents (`--client-registration open`) from loopback addresses, over https or http",
    parse: bool, boolean: true,
  },
  {
    key: "metrics", flag: "metrics", env: "IDENTITY_METRICS", default: String(OPS_DEFAULTS.metrics),
    description: "Prometheus `/metrics`: `off`, `same` (on the main port) or a port number of its own (0 picks a free one)",
    parse: metricsMode,
  },
  {
    key: "metricsHost", flag: "metrics-host", env: "IDENTITY_METRICS_HOST", default: "",
    description: "address `/metrics` listens on when it has a port of its own (for example a private interface); unset is `--host`", parse: text,
  },
  {
    key: "metricsToken", flag: "metrics-token", env: "IDENTITY_METRICS_TOKEN", default: "",
    description: "bearer token `/metrics` requires (`Authorization: Bearer …`); unset leaves it open to whoever reaches it", parse: text,
  },
  {
    key: "logLevel", flag: "log-level", env: "LOG_LEVEL", default: OPS_DEFAULTS.logLevel,
    description: `least severe log level written: ${LOG_LEVELS.join(", ")}`, parse: logLevel,
  },
  {
    key: "logPretty", flag: "log-pretty", env: "IDENTITY_LOG_PRETTY", default: "<stdout is a terminal>",
    description: "human-friendly colored logs instead of JSON lines; unset, they are when standard output is a terminal (`IDENTITY_LOG_PRETTY=false` keeps JSON there)",
    parse: bool, boolean: true,
  },
  {
    key: "shutdownTimeoutSeconds", flag: "shutdown-timeout-seconds", env: "IDENTITY_SHUTDOWN_TIMEOUT_SECONDS",
    default: String(OPS_DEFAULTS.shutdownTimeoutSeconds),
    description: "on SIGTERM/SIGINT, how long in-flight requests may take before their connections are cut", parse: atLeast(0),
  },
  {
    key: "workers", flag: "workers", env: "IDENTITY_WORKERS", default: "1",
    description: "processes serving the one port (node:cluster), each with its caches kept in step and metrics summed; 0 means one per core, 1 a single process",
    parse: atLeast(0),
  },
  {
    key: "keyActivationDelaySeconds", flag: "key-activation-delay-seconds", env: "IDENTITY_KEY_ACTIVATION_DELAY_SECONDS",
    default: String(DEFAULT_KEY_ACTIVATION_DELAY_MS / 1000),
    description: "a key made by `identity keys rotate` (which reads this option too) or the RotateKey RPC is published at once and signs only after this delay",
    parse: atLeast(0),
  },
  {
    key: "smtpUrl", flag: "smtp-url", env: "IDENTITY_SMTP_URL", default: "",
    description:
      "SMTP server for sign-up, verification and reset mail: `smtps://user:password@host:465`, or `smtp://…:587` (STARTTLS required beyond loopback); a secret, never logged. Unset, nothing that needs mail is offered (docs/mail.md)",
    parse: smtpUrl,
  },
  {
    key: "mailFrom", flag: "mail-from", env: "IDENTITY_MAIL_FROM", default: "",
    description: "the From address of every mail, e.g. `Identity <no-reply@example.com>`; required with `--smtp-url`", parse: mailbox,
  },
  {
    key: "passwordMinLength", flag: "password-min-length", env: "IDENTITY_PASSWORD_MIN_LENGTH", default: String(SELF_SERVICE_DEFAULTS.passwordMinLength),
    description: "shortest password sign-up and password reset accept (and never the user name or email)", parse: atLeast(1),
  },
  {
    key: "emailLinkTtlSeconds", flag: "email-link-ttl-seconds", env: "IDENTITY_EMAIL_LINK_TTL_SECONDS",
    default: String(SELF_SERVICE_DEFAULTS.emailLinkTtlSeconds),
    description: "how long a mailed verification or reset link works (once)", parse: atLeast(1),
  },
  {
    key: "signupMaxPerHour", flag: "signup-max-per-hour", env: "IDENTITY_SIGNUP_MAX_PER_HOUR", default: String(SELF_SERVICE_DEFAULTS.signupMaxPerHour),
    description: "sign-up requests one client address may make an hour; beyond them, 429", parse: atLeast(1),
  },
];

/** A value that is nothing but `<something>`: a template's blank, never filled in. */
const PLACEHOLDER = /^\s*<[^<>]*>\s*$/;

/**
 * One option's value from its flag's raw value, else its variable, else its
 * default. A default with a `<placeholder>` in it (the issuer's
 * `http://<host>:<port>`) only describes what happens when unset. A value
 * given as a whole `<placeholder>` (`<your-secret>`, copied from an example
 * and never filled in) is refused; any other value is taken as it is, `<`
 * and all: a real secret may contain one.
 */
function optionValue(option: OptionSpec, flagValue: string | boolean | undefined, env: NodeJS.ProcessEnv): unknown {
  const given = (typeof flagValue === "boolean" ? String(flagValue) : flagValue) ?? env[option.env];
  const raw = given ?? (option.default.includes("<") ? "" : option.default);
  if (raw === "") return undefined;
  try {
    if (given !== undefined && PLACEHOLDER.test(given)) throw new Error(`${given.trim()} looks like a placeholder from an example: set the real value, or leave it unset`);
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
  if (config.clientRegistration === "token" && config.registrationToken === undefined) {
    throw new Error("--client-registration token needs --registration-token (IDENTITY_REGISTRATION_TOKEN)");
  }
  return config as unknown as ServeConfig;
}

/**
 * `config` with every option it leaves unset given the option table's
 * default: the one place defaults are resolved, for a config parsed from the
 * command line and one built in code (tests, embedding) alike. A default
 * that is no value ("", or one like `http://<host>:<port>` that the server
 * works out) stays unset.
 */
export function withDefaults(config: ServeConfig): ServeConfig {
  const resolved: Record<string, unknown> = { ...config };
  for (const option of SERVE_OPTIONS) {
    if (resolved[option.key] === undefined) {
      const value = optionValue(option, undefined, {});
      if (value !== undefined) resolved[option.key] = value;
    }
  }
  return resolved as unknown as ServeConfig;
}

/** A single serve option as an admin command sees it: its flag's value, else its variable, else its default. */
export function resolveServeOption<K extends keyof ServeConfig>(key: K, flagValue: string | undefined, env: NodeJS.ProcessEnv): ServeConfig[K] {
  const option = SERVE_OPTIONS.find((o) => o.key === key)!;
  return optionValue(option, flagValue, env) as ServeConfig[K];
}

/** The options as a Markdown table: docs/configuration.md's reference and `identity serve --help`. */
export function optionsTable(): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|");
  const rows = SERVE_OPTIONS.map(
    (o) => `| \`--${o.flag}\` | \`${o.env}\` | ${o.default ? `\`${cell(o.default)}\`` : "(none)"} | ${cell(o.description)} |`,
  );
  return ["| Flag | Environment variable | Default | Meaning |", "|---|---|---|---|", ...rows].join("\n") + "\n";
}
