import type { ProviderRecord } from "../../shared/model.js";
import { customType } from "./custom.js";
import { githubType } from "./github.js";
import { googleType } from "./google.js";
import { oidcType } from "./oidc.js";
import { withPreset } from "./presets.js";
import type { ProviderType } from "./providerType.js";

/** Every provider type, by the name a provider's `type` field holds. A new type is a module and a row here. */
export const PROVIDER_TYPES = {
  Custom: customType,
  GitHub: githubType,
  Google: googleType,
  OIDC: oidcType,
} as const satisfies Record<string, ProviderType>;

export type ProviderTypeName = keyof typeof PROVIDER_TYPES;

export function isProviderType(name: unknown): name is ProviderTypeName {
  return typeof name === "string" && Object.hasOwn(PROVIDER_TYPES, name);
}

/** A stored provider's type; undefined for a name no row of the table has. */
export function providerTypeOf(name: string): ProviderType | undefined {
  return isProviderType(name) ? PROVIDER_TYPES[name] : undefined;
}

/** The provider with its type's preset filled in where it sets nothing itself. */
export function effectiveProvider(provider: ProviderRecord): ProviderRecord {
  return withPreset(provider, providerTypeOf(provider.type)?.preset);
}
