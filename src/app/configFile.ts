import { readFile } from "node:fs/promises";
import type { Domain } from "../domain/index.js";
import type { Store } from "../store/index.js";
import { isProviderName, parseProviderInput, type ProviderInput } from "../federation/providers.js";
import { OAuthError } from "../oauth/errors.js";
import { parseApplicationInput, type ApplicationInput } from "../accounts/applications.js";
import { parseUserInput, type UserInput } from "../accounts/users.js";
import { parseResourceInput, type ResourceInput } from "../accounts/resources.js";
import { CONSOLE_PROVIDERS_FIELD } from "../accounts/consoleProviders.js";
import { InvalidInputError, optionalStringList } from "../accounts/validation.js";
import { parseTrustedIssuer, type TrustedIssuer } from "../oauth/trustedIssuers.js";

/** The `--config` file: applications, users and providers, each upserted by name; the console's providers, set when present. */
export interface ConfigFile {
  applications: ApplicationInput[];
  users: UserInput[];
  providers: ProviderInput[];
  /** Resource servers (RFC 8707), each upserted by URI. */
  resources: ResourceInput[];
  /** The login providers the console's sign-in page offers (accounts/consoleProviders.ts); left as stored when absent. */
  consoleProviders?: string[];
  /** Platforms whose signed tokens workloads exchange for ours (RFC 7523 §2.1; oauth/trustedIssuers.ts). */
  trustedIssuers: TrustedIssuer[];
}

const SECTIONS = ["applications", "users", "providers", "resources", CONSOLE_PROVIDERS_FIELD, "trustedIssuers"] as const;

/** A config file problem, naming the entry and the field. */
export class ConfigFileError extends Error {}

function entries<T>(raw: Record<string, unknown>, section: string, parse: (entry: Record<string, unknown>) => T): T[] {
  const list = raw[section] ?? [];
  if (!Array.isArray(list)) throw new ConfigFileError(`${section}: must be a list`);
  return list.map((entry, i) => {
    const label = `${section}[${i}]${typeof entry?.name === "string" ? ` (${entry.name})` : ""}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new ConfigFileError(`${label}: must be an object`);
    }
    try {
      return parse(entry as Record<string, unknown>);
    } catch (err) {
      if (err instanceof OAuthError) throw new ConfigFileError(`${label}: ${err.description}`);
      throw err;
    }
  });
}

export function parseConfigFile(text: string): ConfigFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigFileError(`not valid JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new ConfigFileError("must be a JSON object");
  const unknown = Object.keys(raw).find((k) => !(SECTIONS as readonly string[]).includes(k));
  if (unknown) throw new ConfigFileError(`${unknown}: is not a known section (${SECTIONS.join(", ")})`);
  const sections = raw as Record<string, unknown>;
  return {
    applications: entries(sections, "applications", parseApplicationInput),
    users: entries(sections, "users", parseUserInput),
    providers: entries(sections, "providers", parseProviderInput),
    resources: entries(sections, "resources", parseResourceInput),
    consoleProviders: consoleProviders(sections[CONSOLE_PROVIDERS_FIELD]),
    trustedIssuers: entries(sections, "trustedIssuers", parseTrustedIssuer),
  };
}

function consoleProviders(raw: unknown): string[] | undefined {
  try {
    return optionalStringList(raw, CONSOLE_PROVIDERS_FIELD, (p) => (isProviderName(p) ? undefined : "is not a provider name"));
  } catch (err) {
    if (err instanceof OAuthError) throw new ConfigFileError(err.description);
    throw err;
  }
}

export async function loadConfigFile(path: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new ConfigFileError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseConfigFile(text);
}

/**
/**
 * A user entry must not name a user that signing in through a provider
 * created (linked, and no password): whoever holds that account at the
 * provider chose the name, and would get whatever the entry gives, isAdmin
 * included. Checked before anything is applied, so a refused file changes nothing.
 */
async function refuseAdoptions(config: ConfigFile, store: Pick<Store, "users" | "federatedIdentities">): Promise<void> {
  for (const [i, entry] of config.users.entries()) {
    const user = await store.users.findByName(entry.name);
    if (!user || user.passwordHash !== null) continue;
    const [link] = await store.federatedIdentities.listByUser(user.id);
    if (!link) continue;
    throw new ConfigFileError(
      `users[${i}] (${entry.name}): is the name of a user created by signing in through provider ${link.provider}, who has no password; ` +
        "this entry would hand that account (and what the entry sets, isAdmin included) to whoever holds it there. " +
        "Rename this entry, or rename or delete that user first (docs/usage.md)",
    );
  }
}

/**
 * Create or update every entry. Providers first, since applications and the
 * console's providers name them; those must exist (the file's own, or made
 * before), or the start fails naming them.
 */
export async function applyConfigFile(config: ConfigFile, domain: Domain, store: Pick<Store, "users" | "federatedIdentities">): Promise<void> {
  await refuseAdoptions(config, store);
  for (const provider of config.providers) await domain.providerAdmin.upsert(provider);
  for (const user of config.users) await domain.userAdmin.upsert(user);
  for (const app of config.applications) await domain.applicationAdmin.upsert(app);
  for (const resource of config.resources) await domain.resourceAdmin.upsert(resource);
  if (config.consoleProviders === undefined) return;
  try {
    await domain.consoleProviders.set(config.consoleProviders);
  } catch (err) {
    if (err instanceof InvalidInputError) throw new ConfigFileError(err.description);
    throw err;
  }
}
