import type { Clock } from "../clock.js";
import {
  absoluteHttpUrlProblem,
  conflictsAsErrors,
  InvalidInputError,
  optionalBoolean,
  optionalString,
  rejectUnknownFields,
  requireName,
} from "../accounts/validation.js";
import { echo, OAuthError } from "../oauth/errors.js";
import type { ProviderRecord, ProviderRepository } from "../store/providers.js";

export const PROVIDER_FIELDS = [
  "name", "type", "displayName", "clientId", "clientSecret", "authUrl", "scope", "tokenUrl", "userInfoUrl", "favicon", "trustEmail",
] as const;

/** A Custom provider as configured: all the spec's fields are required. */
export interface ProviderInput {
  name: string;
  type: "Custom";
  displayName?: string;
  clientId: string;
  clientSecret: string;
  authUrl: string;
  scope: string;
  tokenUrl: string;
  userInfoUrl: string;
  favicon: string;
  trustEmail?: boolean;
}

function required(raw: Record<string, unknown>, field: string): string {
  const value = optionalString(raw[field], field, 2000);
  if (!value) throw new InvalidInputError(field, "is required");
  return value;
}

function requiredUrl(raw: Record<string, unknown>, field: string): string {
  const value = required(raw, field);
  const problem = absoluteHttpUrlProblem(value);
  if (problem) throw new InvalidInputError(field, problem);
  return value;
}

export function parseProviderInput(raw: Record<string, unknown>): ProviderInput {
  rejectUnknownFields(raw, PROVIDER_FIELDS);
  const name = requireName(raw.name);
  if (raw.type !== "Custom") throw new InvalidInputError("type", 'must be "Custom"');
  return {
    name,
    type: "Custom",
    displayName: optionalString(raw.displayName, "displayName", 200),
    clientId: required(raw, "clientId"),
    clientSecret: required(raw, "clientSecret"),
    authUrl: requiredUrl(raw, "authUrl"),
    scope: required(raw, "scope"),
    tokenUrl: requiredUrl(raw, "tokenUrl"),
    userInfoUrl: requiredUrl(raw, "userInfoUrl"),
    favicon: requiredUrl(raw, "favicon"),
    trustEmail: optionalBoolean(raw.trustEmail, "trustEmail"),
  };
}

/** Provider management shared by the config file, the CLI and FederationService. */
export class ProviderAdmin {
  constructor(
    private readonly repo: ProviderRepository,
    private readonly clock: Clock,
  ) {}

  async upsert(input: ProviderInput): Promise<ProviderRecord> {
    const current = await this.repo.findByName(input.name);
    const now = this.clock.now();
    const record: ProviderRecord = {
      name: input.name,
      type: input.type,
      displayName: input.displayName ?? current?.displayName ?? "",
      clientId: input.clientId,
      clientSecret: input.clientSecret,
      authUrl: input.authUrl,
      scope: input.scope,
      tokenUrl: input.tokenUrl,
      userInfoUrl: input.userInfoUrl,
      favicon: input.favicon,
      trustEmail: input.trustEmail ?? current?.trustEmail ?? false,
      createdAt: current?.createdAt ?? now,
      updatedAt: now,
    };
    await conflictsAsErrors(() => (current ? this.repo.update(record) : this.repo.insert(record)));
    return record;
  }

  async get(name: string): Promise<ProviderRecord> {
    const provider = await this.repo.findByName(name);
    if (!provider) throw new OAuthError("not_found", `no provider named ${echo(name)}`);
    return provider;
  }

  list(): Promise<ProviderRecord[]> {
    return this.repo.list();
  }

  async delete(name: string): Promise<void> {
    if (!(await this.repo.deleteByName(name))) throw new OAuthError("not_found", `no provider named ${echo(name)}`);
  }
}
