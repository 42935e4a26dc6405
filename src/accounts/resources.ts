import { noAudit, recordAdminChange, type AuditEventName, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { echo, OAuthError } from "../oauth/errors.js";
import { canonicalResourceUri } from "../oauth/resourceIndicators.js";
import { cleartextRedirectProblem } from "../oauth/redirectUris.js";
import { ADMIN_SCOPE } from "../oauth/scopes.js";
import type { ResourceRepository } from "../store/resources.js";
import { conflictsAsErrors, FieldChecks, InvalidInputError, optionalString, rejectUnknownFields } from "./validation.js";
import type { ResourceRecord, ResourceScope } from "../shared/model.js";

export const RESOURCE_FIELDS = ["uri", "name", "scopes"] as const;
const MAX_SCOPES = 50;

/** A resource server as the config file, the CLI and the RPC give it; absent fields keep their value on update. */
export interface ResourceInput {
  uri: string;
  name?: string;
  scopes?: ResourceScope[];
}

/**
 * The URI a token's `aud` will carry (RFC 8707 §2): absolute, no fragment,
 * https but on a loopback host; kept as the WHATWG parser writes it, which
 * is how requests are compared with it.
 */
export function parseResourceUri(raw: unknown, field = "uri"): string {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 2000) throw new InvalidInputError(field, "must be an absolute URI of at most 2000 characters");
  const uri = canonicalResourceUri(raw);
  if (uri === undefined) throw new InvalidInputError(field, "must be an absolute URI without a fragment (RFC 8707 §2)");
  const scheme = new URL(uri).protocol;
  if (scheme !== "https:" && scheme !== "http:") throw new InvalidInputError(field, "must use https");
  const cleartext = cleartextRedirectProblem(uri);
  if (cleartext) throw new InvalidInputError(field, cleartext);
  return uri;
}

function parseScopes(raw: unknown): ResourceScope[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw) || raw.length > MAX_SCOPES) throw new InvalidInputError("scopes", `must be a list of at most ${MAX_SCOPES} {name, description} objects`);
  const scopes = raw.map((entry: unknown) => {
    if (typeof entry !== "object" || entry === null) throw new InvalidInputError("scopes", "each must be an object with a name and a description");
    const { name, description, ...rest } = entry as Record<string, unknown>;
    if (Object.keys(rest).length > 0) throw new InvalidInputError("scopes", `${echo(Object.keys(rest)[0]!)} is not a known field of a scope`);
    // RFC 6749 §3.3 scope-token characters, no quote or backslash.
    if (typeof name !== "string" || !/^[\x21\x23-\x5b\x5d-\x7e]{1,100}$/.test(name)) {
      throw new InvalidInputError("scopes", "each name must be 1-100 printable characters without spaces, quotes or backslashes");
    }
    if (name === ADMIN_SCOPE) throw new InvalidInputError("scopes", `${ADMIN_SCOPE} is the service's own scope`);
    const text = optionalString(description ?? "", "scopes", 200) ?? "";
    if (/[\r\n]/.test(text)) throw new InvalidInputError("scopes", "a description is one line");
    return { name, description: text };
  });
  const names = scopes.map((s) => s.name);
  const repeated = names.find((n, i) => names.indexOf(n) !== i);
  if (repeated) throw new InvalidInputError("scopes", `${repeated} is listed twice`);
  return scopes;
}

/** Check untrusted input field by field, naming every bad one. */
export function parseResourceInput(raw: Record<string, unknown>): ResourceInput {
  const checks = new FieldChecks();
  checks.check(() => rejectUnknownFields(raw, RESOURCE_FIELDS));
  const uri = checks.check(() => parseResourceUri(raw.uri));
  const name = checks.check(() => {
    const value = optionalString(raw.name === "" ? undefined : raw.name, "name", 200);
    if (value !== undefined && /[\r\n]/.test(value)) throw new InvalidInputError("name", "must be one line");
    return value;
  });
  const scopes = checks.check(() => parseScopes(raw.scopes));
  checks.done();
  return { uri: uri!, ...(name !== undefined ? { name } : {}), ...(scopes !== undefined ? { scopes } : {}) };
}

/** Resource server management shared by the config file, the CLI and the admin RPCs. */
export class ResourceAdmin {
  constructor(
    private readonly repo: ResourceRepository,
    private readonly clock: Clock,
    private readonly audit: AuditTrail = noAudit,
  ) {}

  async create(input: ResourceInput): Promise<ResourceRecord> {
    if (!input.name) throw new InvalidInputError("name", "is required");
    const now = this.clock.now();
    const resource: ResourceRecord = { uri: input.uri, name: input.name, scopes: input.scopes ?? [], createdAt: now, updatedAt: now };
    await conflictsAsErrors(() => this.repo.insert(resource));
    this.recordChange("resource_created", resource, undefined, resource);
    return resource;
  }

  async update(input: ResourceInput): Promise<ResourceRecord> {
    const current = await this.get(input.uri);
    const resource: ResourceRecord = {
      ...current,
      name: input.name ?? current.name,
      scopes: input.scopes ?? current.scopes,
      updatedAt: this.clock.now(),
    };
    if (!(await this.repo.update(resource))) throw notFound(input.uri);
    this.recordChange("resource_updated", resource, current, resource);
    return resource;
  }

  /** Create, or update the one with this URI (config file semantics). */
  async upsert(input: ResourceInput): Promise<ResourceRecord> {
    return (await this.repo.findByUri(input.uri)) ? this.update(input) : this.create(input);
  }

  async get(uri: string): Promise<ResourceRecord> {
    const resource = await this.repo.findByUri(canonicalResourceUri(uri) ?? uri);
    if (!resource) throw notFound(uri);
    return resource;
  }

  list(): Promise<ResourceRecord[]> {
    return this.repo.list();
  }

  /** Tokens already issued for it keep their `aud`; no new one names it. */
  async delete(uri: string): Promise<void> {
    const current = await this.get(uri);
    if (!(await this.repo.deleteByUri(current.uri))) throw notFound(uri);
    this.recordChange("resource_deleted", current, current, undefined);
  }

  private recordChange(event: AuditEventName, resource: ResourceRecord, before: ResourceRecord | undefined, after: ResourceRecord | undefined): void {
    recordAdminChange(this.audit, event, { name: resource.uri }, before, after, []);
  }
}

const notFound = (uri: string) => new OAuthError("not_found", `no resource server with URI ${echo(uri)}`);
