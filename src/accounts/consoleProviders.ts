import { noAudit, recordAdminChange, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { isProviderName } from "../federation/providers.js";
import { OAuthError } from "../oauth/errors.js";
import type { ApplicationRepository } from "../store/applications.js";
import type { ProviderRepository } from "../store/providers.js";
import { CONSOLE_APP_NAME } from "./consoleClient.js";
import { InvalidInputError, optionalStringList } from "./validation.js";

/** The setting's name in the config file and the contract (SettingsAdminService). */
export const CONSOLE_PROVIDERS_FIELD = "consoleProviders";

/**
 * The login providers the console's sign-in page offers beside the password.
 * Stored as the console's application's providers, the list the login page
 * reads for every application, so nothing else holds a copy: each read goes
 * to the database (not the repository's cache by client id), and a change
 * made on any instance counts at the next sign-in on all of them.
 * `--console-providers` overrides it on the instance given it, without
 * writing it, so instances sharing the database do not fight over the row.
 */
export class ConsoleProviders {
  constructor(
    private readonly apps: ApplicationRepository,
    private readonly providers: ProviderRepository,
    private readonly clock: Clock,
    private readonly audit: AuditTrail = noAudit,
    /** --console-providers: what this instance offers instead, when given. */
    readonly override?: readonly string[],
  ) {}

  /** The stored list, read now. */
  async stored(): Promise<string[]> {
    return (await this.apps.findByName(CONSOLE_APP_NAME))?.providers ?? [];
  }

  /** What the console's sign-in page offers on this instance now. */
  async offered(): Promise<string[]> {
    return this.override ? [...this.override] : this.stored();
  }

  /**
   * Stores a new list (an admin's, or the config file's at start). Each name
   * must be an existing provider's: a typo would silently leave an admin
   * without the button. Only the providers column is written.
   */
  async set(raw: unknown): Promise<string[]> {
    const names = optionalStringList(raw, CONSOLE_PROVIDERS_FIELD, (p) => (isProviderName(p) ? undefined : "is not a provider name")) ?? [];
    const known = new Set((await this.providers.list()).map((p) => p.name));
    const unknown = names.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      const quoted = unknown.map((name) => JSON.stringify(name)).join(", ");
      throw new InvalidInputError(CONSOLE_PROVIDERS_FIELD, `${quoted} ${unknown.length === 1 ? "is not a login provider" : "are not login providers"}`);
    }
    // Made at every start before anything can call this (app/server.ts).
    const current = await this.apps.findByName(CONSOLE_APP_NAME);
    if (!current) throw new OAuthError("temporarily_unavailable", "the admin console's application is not set up yet");
    if (current.providers.length === names.length && current.providers.every((name, i) => name === names[i])) return names;
    const app = { ...current, providers: names, updatedAt: this.clock.now() };
    await this.apps.update(app, current);
    recordAdminChange(this.audit, "application_updated", { name: app.name, clientId: app.clientId }, { providers: current.providers }, { providers: names }, []);
    return names;
  }
}
