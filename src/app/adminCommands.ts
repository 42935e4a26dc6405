import { parseArgs } from "node:util";
import { parseApplicationInput } from "./../accounts/applications.js";
import { parseUserInput } from "./../accounts/users.js";
import { systemClock } from "./../shared/clock.js";
import { resolveServeOption, SERVE_OPTIONS } from "./config.js";
import { createDomain, type Domain } from "./../domain/index.js";
import { parseProviderInput, parseProviderPatch } from "./../federation/providers.js";
import { OAuthError } from "./../oauth/errors.js";
import { openDb } from "./../store/db.js";
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
  type: { type: "string" },
  scope: { type: "string" },
  "auth-url": { type: "string" },
  "token-url": { type: "string" },
  "user-info-url": { type: "string" },
  favicon: { type: "string" },
  "trust-email": { type: "boolean" },
  "no-trust-email": { type: "boolean" },
  "key-activation-delay-seconds": { type: "string" },
} as const;

const DEFAULT_DATABASE = SERVE_OPTIONS.find((o) => o.key === "database")!.default;

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const PLURAL: Record<string, string> = { redirectUri: "redirectUris", grantType: "grantTypes", provider: "providers", admin: "isAdmin" };
const NUMERIC = new Set(["expireInHours", "refreshExpireInHours"]);

/**
 * `identity app|user|provider|keys <verb> [flags]`, run directly on the database.
 * Provider client secrets are sealed with IDENTITY_SECRET_KEY from `env`, as `serve` does.
 * Returns what to print; bad input throws an OAuthError naming the field.
 */
export async function runAdminCommand(noun: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const [verb, ...rest] = args;
  const { values } = parseArgs({ args: rest, options: ADMIN_FLAGS, strict: true, allowPositionals: false });
  const fields: Record<string, unknown> = {};
  for (const [given, value] of Object.entries(values)) {
    if (given === "database" || given === "kid" || given === "key-activation-delay-seconds") continue;
    const negated = given.startsWith("no-");
    const flag = negated ? given.slice(3) : given;
    const key = PLURAL[camel(flag)] ?? camel(flag);
    if (negated && key in fields) throw new OAuthError("invalid_request", `--${flag} and --${given} contradict each other`);
    fields[key] = negated ? false : NUMERIC.has(key) ? Number(value) : value;
  }
  const db = await openDb({ url: values.database || env.DATABASE_URL || DEFAULT_DATABASE });
  const store = createStore(db);
  try {
    const activationDelaySeconds = resolveServeOption("keyActivationDelaySeconds", values["key-activation-delay-seconds"], env);
    const domain = await createDomain({
      store,
      clock: systemClock,
      issuer: "http://localhost",
      secretKey: env.IDENTITY_SECRET_KEY || undefined,
      keyActivationDelayMs: activationDelaySeconds === undefined ? undefined : activationDelaySeconds * 1000,
    });
    const result = await runAdmin(domain, noun, verb, fields, values.kid);
    return typeof result === "string" ? result : JSON.stringify(result, null, 2) + "\n";
  } finally {
    await store.close();
    await db.destroy();
  }
}

async function runAdmin(domain: Domain, noun: string, verb: string | undefined, fields: Record<string, unknown>, kid?: string): Promise<unknown> {
  const name = () => {
    if (typeof fields.name !== "string") throw new OAuthError("invalid_request", "--name is required");
    return fields.name;
  };
  const publicApp = ({ clientSecretHash: _h, ...app }: ApplicationRecord) => app;
  const publicUser = ({ passwordHash: _h, ...user }: UserRecord) => user;
  const publicProvider = (provider: ProviderRecord) => {
    const { clientSecret: _s, ...rest } = provider;
    return { ...rest, clientSecretEncrypted: domain.providerAdmin.isEncrypted(provider) };
  };
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
    case "user update":
      return publicUser(await domain.userAdmin.update(parseUserInput(fields)));
    case "user list":
      return (await domain.userAdmin.list()).map(publicUser);
    case "user show":
      return publicUser(await domain.userAdmin.get(name()));
    case "user delete":
      await domain.userAdmin.delete(name());
      return { deleted: name() };
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
      const { kid: signing } = await domain.keys.signingKey();
      const now = domain.clock.now();
      const state = (k: Pick<SigningKeyRecord, "kid" | "activeFrom" | "retiredAt">) =>
        k.retiredAt !== null ? "retired" : k.kid === signing ? "signing" : k.activeFrom > now ? "pending" : "retiring";
      return (await domain.keys.list()).map(({ privateJwk: _p, publicJwk: _j, ...k }) => ({ ...k, state: state(k) }));
    }
    case "keys rotate": {
      const { privateJwk: _p, ...record } = await domain.keys.rotate();
      return record;
    }
    case "keys export": {
      const exported = await domain.keys.export(kid);
      return `# kid ${exported.kid}\n${exported.publicKeyPem}${exported.certificatePem}`;
    }
    default:
      throw new OAuthError("invalid_request", `unknown command: ${noun} ${verb ?? ""}`.trim());
  }
}
