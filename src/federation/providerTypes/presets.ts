import type { ProviderRecord, UserMapping } from "../../shared/model.js";

/** What a preset type fills in for the fields a provider leaves empty. */
export interface Preset {
  authUrl: string;
  tokenUrl: string;
  userInfoUrl: string;
  scope: string;
  favicon: string;
  emailsUrl?: string;
  userMapping: UserMapping;
}

/**
 * The provider as its type reads it: every URL, scope and favicon field the
 * provider sets itself wins over the preset's (so a preset can be pointed at
 * another host, e.g. GitHub Enterprise), and its user mapping keys win over
 * the preset's mapping.
 */
export function withPreset(provider: ProviderRecord, preset: Preset | undefined): ProviderRecord {
  if (!preset) return provider;
  return {
    ...provider,
    authUrl: provider.authUrl || preset.authUrl,
    tokenUrl: provider.tokenUrl || preset.tokenUrl,
    userInfoUrl: provider.userInfoUrl || preset.userInfoUrl,
    scope: provider.scope || preset.scope,
    favicon: provider.favicon || preset.favicon || (provider.issuer ? new URL("/favicon.ico", provider.issuer).href : ""),
    emailsUrl: provider.emailsUrl || (preset.emailsUrl ?? ""),
    userMapping: { ...preset.userMapping, ...provider.userMapping },
  };
}
