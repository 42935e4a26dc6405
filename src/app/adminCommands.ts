import { parseArgs } from "node:util";
import { parseApplicationInput } from "./../accounts/applications.js";
import { parseUserInput } from "./../accounts/users.js";
import { systemClock } from "./../shared/clock.js";
import { createLogger } from "./../shared/log.js";
import { resolveServeOption, SERVE_OPTIONS } from "./config.js";
import { createDomain, type Domain } from "./../domain/index.js";
import { parseProviderInput, parseProviderPatch } from "./../federation/providers.js";
import { OAuthError } from "./../oauth/errors.js";
import { signingAlgOf } from "./../oauth/keys.js";
import { adminCaller } from "./../shared/audit.js";
import { openDatabase } from "./database.js";
import { resourceArgs, RESOURCE_FLAGS, RESOURCE_HELP, runResource } from "./resourceCommands.js";
import { createStore } from "./../store/index.js";
import type { ApplicationRecord, ProviderRecord, SigningKeyRecord, UserRecord } from "./../shared/model.js";

/** Flags shared by the admin commands, mapped onto the config-file field names. */
const ADMIN_FLAGS = {
  database: { type: "string" },
  name: { type: "string" },
  "client-id": { type: "string" },
  "client-secret": { type: "string" },
  "redirect-uri": { type: "string", multiple: true },
  "grant-type": { type: "string", multiple: true },
  provider: { type: "string", multiple: true },
  "allowed-origin": { type: "string", multiple: true },
  "token-format": { type: "string" },
  "signing-alg": { type: "string" },
  "access-token-strategy": { type: "string" },
  "public-client": { type: "boolean" },
  "no-public-client": { type: "boolean" },
  // The second-factor policy of an application (optional, required), and an admin's reset of a user's factors.
  mfa: { type: "string" },
  "reset-mfa": { type: "boolean" },
  signup: { type: "boolean" },
  "no-signup": { type: "boolean" },
  // Client authentication by signed assertion and token exchange (docs/client-authentication.md, docs/token-exchange.md).
  "token-endpoint-auth-method": { type: "string" },
  jwks: { type: "string" },
  "jwks-uri": { type: "string" },
  "exchange-audience": { type: "string", multiple: true },
  "allow-impersonation": { type: "boolean" },
  "no-allow-impersonation": { type: "boolean" },
  // RFC 9126 §5 (docs/high-assurance.md).
  "require-pushed-authorization-requests": { type: "boolean" },
  "no-require-pushed-authorization-requests": { type: "boolean" },
  "dpop-bound-access-tokens": { type: "boolean" },
  "no-dpop-bound-access-tokens": { type: "boolean" },
  // Back-channel logout (docs/logout.md).
  "backchannel-logout-uri": { type: "string" },
  "backchannel-logout-session-required": { type: "boolean" },
  "no-backchannel-logout-session-required": { type: "boolean" },
  "allow-private-backchannel-logout-uri": { type: "boolean" },
  "no-allow-private-backchannel-logout-uri": { type: "boolean" },
  // The FAPI 2.0 profile: `fapi2`, or "" for none (docs/high-assurance.md).
  profile: { type: "string" },
  // `user verify-email` mails through the same settings as `serve` (docs/mail.md).
  "smtp-url": { type: "string" },
  "mail-from": { type: "string" },
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
  // Node 20's parseArgs has no negation, so the way back is spelled out.
  "no-email-verified": { type: "boolean" },
  "no-admin": { type: "boolean" },
  "no-disabled": { type: "boolean" },
  kid: { type: "string" },
  alg: { type: "string" },
  type: { type: "string" },
  scope: { type: "string" },
  "auth-url": { type: "string" },
  "token-url": { type: "string" },
  "user-info-url": { type: "string" },
  favicon: { type: "string" },
  "trust-email": { type: "boolean" },
  "no-trust-email": { type: "boolean" },
  // A JSON object: --user-mapping '{"id":"id","username":"login"}'.
  "user-mapping": { type: "string" },
  "token-auth-method": { type: "string" },
  pkce: { type: "boolean" },
  "no-pkce": { type: "boolean" },
  "allow-insecure-urls": { type: "boolean" },
  "no-allow-insecure-urls": { type: "boolean" },
  "emails-url": { type: "string" },
  issuer: { type: "string" },
  "shared-callback": { type: "boolean" },
  "no-shared-callback": { type: "boolean" },
  "key-activation-delay-seconds": { type: "string" },
} as const;

const DEFAULT_DATABASE = SERVE_OPTIONS.find((o) => o.key === "database")!.default;

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const PLURAL: Record<string, string> = {
  redirectUri: "redirectUris", grantType: "grantTypes", provider: "providers", allowedOrigin: "allowedOrigins", admin: "isAdmin", exchangeAudience: "exchangeAudiences",
};
const NUMERIC = new Set(["expireInHours", "refreshExpireInHours"]);
const seconds = (ms: number) => Math.floor(ms / 1000);

/** A flag whose value is a JSON object, parsed for the shared validation (which names what is wrong in it). */
function jsonFlag(flag: string, value: unknown): unknown {
  try {
    return JSON.parse(String(value));
  } catch {
    throw new OAuthError("invalid_request", `--${flag} must be a JSON object`);
  }
}

/** What each admin command does, and the flags it reads besides --database. */
const ADMIN_HELP: Record<string, { verbs: [string, string][]; flags: string[] }> = {
  app: {
    verbs: [
      ["create --name NAME [flags]", "create an application; a generated client secret is printed once"],
      ["list", "list the applications"],
      ["show --name NAME", "show one application"],
      ["update --name NAME [flags]", "change only the fields whose flags are given"],
      ["delete --name NAME", "delete an application"],
    ],
    flags: [
      "name", "client-id", "client-secret", "redirect-uri", "grant-type", "provider", "allowed-origin", "token-format",
      "signing-alg", "access-token-strategy", "expire-in-hours", "refresh-expire-in-hours", "public-client", "no-public-client", "mfa",
      "signup", "no-signup", "token-endpoint-auth-method", "jwks", "jwks-uri", "exchange-audience", "allow-impersonation", "no-allow-impersonation",
      "require-pushed-authorization-requests", "no-require-pushed-authorization-requests",
      "dpop-bound-access-tokens", "no-dpop-bound-access-tokens",
      "backchannel-logout-uri", "backchannel-logout-session-required", "no-backchannel-logout-session-required",
      "allow-private-backchannel-logout-uri", "no-allow-private-backchannel-logout-uri", "profile",
    ],
  },
  user: {
    verbs: [
      ["create --name NAME [flags]", "create a user"],
      ["list", "list the users"],
      ["show --name NAME", "show one user, with its second factors"],
      ["update --name NAME [flags]", "change only the fields whose flags are given; --reset-mfa removes every second factor"],
      ["delete --name NAME", "delete a user"],
      ["verify-email --name NAME --issuer URL --smtp-url URL --mail-from ADDR", "mail the user a link that verifies its email, and wait for delivery (flags or their IDENTITY_ variables, as for serve)"],
    ],
    flags: [
      "name", "password", "display-name", "email", "email-verified", "no-email-verified", "avatar", "phone", "address",
      "admin", "no-admin", "disabled", "no-disabled", "reset-mfa", "issuer", "smtp-url", "mail-from",
    ],
  },
  provider: {
    verbs: [
      ["create --name NAME --type TYPE [flags]", "create a login provider: Custom, GitHub, Google or OIDC (its secret is sealed with IDENTITY_SECRET_KEY when set)"],
      ["list", "list the providers, without their secrets"],
      ["show --name NAME", "show one provider, without its secret"],
      ["update --name NAME [flags]", "change only the fields whose flags are given"],
      ["delete --name NAME", "delete a provider"],
    ],
    flags: [
      "name", "type", "display-name", "client-id", "client-secret", "auth-url", "token-url", "user-info-url", "favicon", "scope",
      "trust-email", "no-trust-email", "user-mapping", "token-auth-method", "pkce", "no-pkce", "allow-insecure-urls", "no-allow-insecure-urls",
      "emails-url", "issuer", "shared-callback", "no-shared-callback",
    ],
  },
  resource: RESOURCE_HELP,
  keys: {
    verbs: [
      ["list", "the signing keys: kid, alg, times, state (pending, signing, retiring or retired), per algorithm"],
      ["rotate [--alg ALG] [--key-activation-delay-seconds N]", "a new key of ALG (RS256 by default; PS256, ES256, EdDSA), published at once, signing after the delay (default 600, or its variable)"],
      ["export [--kid KID | --alg ALG]", "a public key as PEM, then a self-signed X.509 certificate where one can be made (the RS256 signing key by default)"],
    ],
    flags: ["kid", "alg", "key-activation-delay-seconds"],
  },
};

/** `identity <noun> --help`: the verbs, then the flags this build accepts for them; undefined for another noun. */
export function adminUsage(noun: string): string | undefined {
  const help = ADMIN_HELP[noun];
  if (!help) return undefined;
  const table: Record<string, { type: string; multiple?: boolean }> = noun === "resource" ? RESOURCE_FLAGS : ADMIN_FLAGS;
  const known = help.flags.filter((flag) => flag in table);
  const shape = (flag: string) => {
    const spec = table[flag]!;
    return spec.type === "boolean" ? `--${flag}` : `--${flag} VALUE${spec.multiple ? " (repeatable)" : ""}`;
  };
  const width = Math.max(...help.verbs.map(([verb]) => verb.length));
  return [
    `usage: identity ${noun} <command> [flags]`,
    "",
    ...help.verbs.map(([verb, what]) => `  ${verb.padEnd(width)}  ${what}`),
    "",
    "flags:",
    ...known.map((flag) => `  ${shape(flag)}`),
    `  --database PATH|URL  SQLite file or postgres:// URL (else DATABASE_URL, else ${DEFAULT_DATABASE})`,
    "",
    "Output is JSON; times are epoch seconds, as in the admin RPCs. More: docs/usage.md",
    "",
  ].join("\n");
}

/**
 * `identity app|user|provider|keys <verb> [flags]`, run directly on the database.
 * Provider client secrets are sealed with IDENTITY_SECRET_KEY from `env`, as `serve` does.
 * Returns what to print; bad input throws an OAuthError naming the field.
 */
export async function runAdminCommand(noun: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const [verb, ...rest] = args;
  // `resource` has flags of its own (--scope repeats there): resourceCommands.ts.
  const resourceValues = noun === "resource" ? resourceArgs(rest) : undefined;
  const { values } = resourceValues ? { values: { database: resourceValues.database } as Partial<Record<keyof typeof ADMIN_FLAGS, string>> } : parseArgs({ args: rest, options: ADMIN_FLAGS, strict: true, allowPositionals: false });
  const fields: Record<string, unknown> = {};
  for (const [given, value] of Object.entries(values)) {
    if (["database", "kid", "alg", "key-activation-delay-seconds", "smtp-url", "mail-from"].includes(given)) continue;
    const negated = given.startsWith("no-");
    const flag = negated ? given.slice(3) : given;
    const key = PLURAL[camel(flag)] ?? camel(flag);
    if (negated && key in fields) throw new OAuthError("invalid_request", `--${flag} and --${given} contradict each other`);
    fields[key] = negated ? false : NUMERIC.has(key) ? Number(value) : key === "userMapping" ? jsonFlag(flag, value) : value;
  }
  const db = await openDatabase({ url: values.database || env.DATABASE_URL || DEFAULT_DATABASE });
  const store = createStore(db);
  try {
    const activationDelaySeconds = resolveServeOption("keyActivationDelaySeconds", values["key-activation-delay-seconds"], env);
    const mailing = noun === "user" && verb === "verify-email";
    const domain = await createDomain({
      store,
      clock: systemClock,
      issuer: mailing ? mailIssuer(values.issuer, env) : "http://localhost",
      ...(mailing ? { selfService: mailSettings(values["smtp-url"], values["mail-from"], env), logger: createLogger({ level: "warn" }) } : {}),
      secretKey: env.IDENTITY_SECRET_KEY || undefined,
      keyActivationDelayMs: activationDelaySeconds === undefined ? undefined : activationDelaySeconds * 1000,
    });
    const result = resourceValues ? await runResource(domain, verb, resourceValues) : await runAdmin(domain, noun, verb, fields, values.kid, values.alg);
    return typeof result === "string" ? result : JSON.stringify(result, null, 2) + "\n";
  } finally {
    await store.close();
    await db.destroy();
  }
}

/** The issuer a mailed link is made from: --issuer or IDENTITY_ISSUER, never a guess. */
function mailIssuer(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  const issuer = resolveServeOption("issuer", flag, env);
  if (!issuer) throw new OAuthError("invalid_request", "--issuer (or IDENTITY_ISSUER) is required: the mailed link is made from it");
  return issuer;
}

/** --smtp-url and --mail-from, or their variables, as `serve` reads them. */
function mailSettings(smtpFlag: string | undefined, fromFlag: string | undefined, env: NodeJS.ProcessEnv) {
  const smtpUrl = resolveServeOption("smtpUrl", smtpFlag, env);
  const from = resolveServeOption("mailFrom", fromFlag, env);
  if (!smtpUrl || !from) throw new OAuthError("invalid_request", "--smtp-url and --mail-from (or their IDENTITY_ variables) are required");
  return { mail: { smtpUrl, from } };
}

// Times as the admin RPCs answer them (proto/identity/v1/admin.proto): the same names, in epoch seconds.
const times = ({ createdAt, updatedAt }: { createdAt: number; updatedAt: number }) => ({ createdTime: seconds(createdAt), updatedTime: seconds(updatedAt) });

/** An application as the commands print it: no secret hash; a registered client's registration access token hash stays inside too. */
function publicApp(app: ApplicationRecord) {
  const { clientSecretHash: _h, clientSecretSealed: _s, registration, createdAt: _c, updatedAt: _u, ...rest } = app;
  return { ...rest, ...(registration ? { registered: true, clientMetadata: registration.metadata } : {}), ...times(app) };
}

function publicUser(user: UserRecord) {
  const { passwordHash: _h, createdAt: _c, updatedAt: _u, ...rest } = user;
  return { ...rest, ...times(user) };
}

function providerView(domain: Domain, provider: ProviderRecord) {
  const { clientSecret: _s, createdAt: _c, updatedAt: _u, ...rest } = provider;
  return { ...rest, ...times(provider), clientSecretEncrypted: domain.providerAdmin.isEncrypted(provider) };
}

/** A signing key as the commands print it; retiredTime is 0 while the key is published, as in the RPC's SigningKey. */
function publicKey({ privateJwk: _p, createdAt, activeFrom, retiredAt, ...key }: SigningKeyRecord) {
  return { ...key, createdTime: seconds(createdAt), activeFrom: seconds(activeFrom), retiredTime: seconds(retiredAt ?? 0) };
}

async function runAdmin(
  domain: Domain,
  noun: string,
  verb: string | undefined,
  fields: Record<string, unknown>,
  kid?: string,
  alg?: string,
): Promise<unknown> {
  const name = () => {
    if (typeof fields.name !== "string") throw new OAuthError("invalid_request", "--name is required");
    return fields.name;
  };
  const publicProvider = (provider: ProviderRecord) => providerView(domain, provider);
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
    case "user update": {
      const { resetMfa, ...changes } = fields;
      const updated = Object.keys(changes).length > 1 || !resetMfa ? await domain.userAdmin.update(parseUserInput(changes)) : await domain.userAdmin.get(name());
      // A user who lost their device (docs/second-factors.md): every factor and recovery code goes.
      if (resetMfa) await domain.secondFactors.removeAll(updated, adminCaller.current().actor);
      return { ...publicUser(updated), ...(await factorsOf(domain, updated)) };
    }
    case "user list":
      return (await domain.userAdmin.list()).map(publicUser);
    case "user show": {
      const user = await domain.userAdmin.get(name());
      return { ...publicUser(user), ...(await factorsOf(domain, user)) };
    }
    case "user delete":
      await domain.userAdmin.delete(name());
      return { deleted: name() };
    case "user verify-email": {
      const { delivered } = await domain.selfService.emailVerification.send(name());
      // The mail's failures are on standard error, from the outbox's log.
      if (!(await delivered)) throw new OAuthError("temporarily_unavailable", "the verification mail could not be delivered");
      return { mailed: name() };
    }
    case "provider create":
      return publicProvider(await domain.providerAdmin.create(parseProviderInput(fields)));
    case "provider update":
      return publicProvider(await domain.providerAdmin.update(parseProviderPatch(fields)));
    case "provider list":
      return (await domain.providerAdmin.list()).map(publicProvider);
    case "provider show":
      return publicProvider(await domain.providerAdmin.get(name()));
    case "provider delete":
      await domain.providerAdmin.delete(name());
      return { deleted: name() };
    case "keys list": {
      const signing = await domain.keys.signingKids();
      const now = domain.clock.now();
      const state = (k: Pick<SigningKeyRecord, "kid" | "activeFrom" | "retiredAt">) =>
        k.retiredAt !== null ? "retired" : signing.has(k.kid) ? "signing" : k.activeFrom > now ? "pending" : "retiring";
      return (await domain.keys.list()).map((k) => {
        const { publicJwk: _j, ...shown } = publicKey(k);
        return { ...shown, state: state(k) };
      });
    }
    case "keys rotate":
      return publicKey(await domain.keys.rotate(undefined, signingAlgOf(alg)));
    case "keys export": {
      const exported = await domain.keys.export(kid, signingAlgOf(alg));
      return `# kid ${exported.kid}\n${exported.publicKeyPem}${exported.certificatePem}`;
    }
    default:
      throw new OAuthError("invalid_request", `unknown command: ${`${noun} ${verb ?? ""}`.trim()} (see identity ${noun} --help)`);
  }
}

/** A user's second factors as `user show` lists them (type, name, created), never a secret. */
async function factorsOf(domain: Domain, user: UserRecord) {
  const factors = await domain.secondFactors.list(user.id);
  return {
    factors: factors.map((f) => ({ id: f.id, type: f.type, name: f.name, createdTime: seconds(f.createdAt) })),
    recoveryCodesLeft: await domain.secondFactors.recoveryCodesLeft(user.id),
  };
}
