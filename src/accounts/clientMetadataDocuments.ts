import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { noAudit, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { parseClientMetadata, type ClientMetadata } from "../oauth/clientMetadata.js";
import { echo, OAuthError } from "../oauth/errors.js";
import { noSecretHash, sha256 } from "../oauth/secrets.js";
import { UpstreamError, type UpstreamClient } from "../federation/upstream.js";
import { isLoopback } from "../federation/urlRule.js";
import type { ApplicationRepository } from "../store/applications.js";
import { ConflictError } from "../store/errors.js";
import type { RegistrationCountRepository } from "../store/registrationCounts.js";
import { applicationRecord, type ApplicationRecord } from "../shared/model.js";
import { REGISTERED_REFRESH_HOURS, registeredPolicy, registrationBudgetKey } from "./clientRegistration.js";

/**
 * The bounds of fetching and caching client ID metadata documents; docs/mcp.md
 * states them. A document is fetched again only once its period ends:
 * Cache-Control max-age, held between the minimum and the maximum; the
 * default without one; the minimum for no-cache or no-store. A document that
 * could not be fetched or was refused is not asked for again for the failure
 * period. Each process keeps at most `maxEntries` periods, the oldest
 * forgotten first (a forgotten one is fetched again at its next use).
 */
export const METADATA_DOCUMENT_BOUNDS = {
  maxBytes: 5 * 1024,
  timeoutMs: 5_000,
  maxEntries: 1000,
  minSeconds: 300,
  defaultSeconds: 3600,
  maxSeconds: 86_400,
  failureSeconds: 60,
  /** The longest client_id URL (the applications' client_id column). */
  maxUrlLength: 200,
} as const;

export interface MetadataDocumentPolicy {
  /** `--client-registration open`: an https client_id names a document. */
  enabled: boolean;
  /** `--allow-insecure-client-metadata` (tests): loopback targets over https and http. */
  allowInsecure: boolean;
  /** Clients first seen per client address per hour (`--registration-max-per-hour`, shared with RFC 7591). */
  maxPerHour: number;
}

/** What a client id lookup needs: the applications repository, or one that puts metadata documents in front of it. */
export type ClientLookup = Pick<ApplicationRepository, "findByClientId"> & Partial<Pick<ApplicationRepository, "cachedByClientId">>;

type Period = { until: number; refusal?: OAuthError };

const HOUR_MS = 3600_000;
const refused = (description: string) => new OAuthError("invalid_client", description);

/**
 * Clients that name themselves by the https URL of their metadata document
 * (the IETF draft "OAuth Client ID Metadata Document", as MCP uses it). The
 * document's client metadata is held to the rules of RFC 7591 registration
 * (clientMetadata.ts) and kept as an application row whose client_id is the
 * URL, a public client that needs consent. The authorize endpoint alone makes
 * a new one, taking one place of the address's registration budget; the
 * token endpoint only refreshes a known one. Concurrent lookups share one
 * fetch.
 */
export class ClientMetadataDocuments {
  private readonly periods = new Map<string, Period>();
  private readonly fetching = new Map<string, Promise<ApplicationRecord>>();

  constructor(
    private readonly apps: Pick<ApplicationRepository, "findByClientId" | "insert" | "update">,
    private readonly counts: Pick<RegistrationCountRepository, "reserve">,
    private readonly clock: Clock,
    private readonly upstream: Pick<UpstreamClient, "requestJsonWithHeaders">,
    readonly policy: MetadataDocumentPolicy,
    private readonly audit: AuditTrail = noAudit,
  ) {}

  /** Whether this client_id is a URL this service reads as a metadata document's. */
  names(clientId: string): boolean {
    return this.policy.enabled && (clientId.startsWith("https://") || (this.policy.allowInsecure && clientId.startsWith("http://")));
  }

  /**
   * At the authorize endpoint: the client of the document `clientId` names,
   * fetched when it is new or its period has ended. A new one takes a place
   * of `clientAddress`'s budget, kept even when the fetch fails: the call
   * was made. Refusals are invalid_client, for the user's eyes only.
   */
  async admit(clientId: string, clientAddress: string | undefined): Promise<void> {
    if (!this.names(clientId)) return;
    await this.resolve(clientId, clientAddress ?? "unknown");
  }

  /** A known client of a metadata document, fetched again once its period has ended; undefined when unknown or refused. */
  async application(clientId: string, fromDatabase = false): Promise<ApplicationRecord | undefined> {
    try {
      return await this.resolve(clientId, undefined, fromDatabase);
    } catch (err) {
      if (err instanceof OAuthError) return undefined;
      throw err;
    }
  }

  /** The lookup that sends metadata-document client ids here and every other to `apps`. */
  lookup(apps: ClientLookup): ClientLookup {
    return {
      findByClientId: (clientId, fromDatabase) => (this.names(clientId) ? this.application(clientId, fromDatabase) : apps.findByClientId(clientId, fromDatabase)),
      cachedByClientId: (clientId) => (this.names(clientId) ? undefined : apps.cachedByClientId?.(clientId)),
    };
  }

  /** `newFrom`: the address a new client is counted against; without it, an unknown client stays unknown. */
  private async resolve(url: string, newFrom: string | undefined, fromDatabase = false): Promise<ApplicationRecord | undefined> {
    const problem = clientIdUrlProblem(url, this.policy.allowInsecure);
    if (problem) throw refused(`the client_id ${problem}`);
    const period = this.fresh(url);
    if (period) {
      if (period.refusal) throw period.refusal;
      const app = await this.apps.findByClientId(url, fromDatabase);
      if (app || newFrom === undefined) return app;
    }
    const known = await this.apps.findByClientId(url, fromDatabase);
    // An application an administrator made with this client_id is theirs, never read from a document.
    if (known && !known.registration?.metadataDocument) return known;
    if (!known && newFrom === undefined) return undefined;
    // A fetch may have run and ended while the row was read: its period answers.
    const settled = this.fresh(url);
    if (settled && settled !== period) return this.resolve(url, newFrom, fromDatabase);
    let running = this.fetching.get(url);
    if (!running) {
      running = this.refresh(url, known, newFrom).finally(() => this.fetching.delete(url));
      this.fetching.set(url, running);
    }
    return running;
  }

  private fresh(url: string): Period | undefined {
    const period = this.periods.get(url);
    return period && period.until > this.clock.now() ? period : undefined;
  }

  private async refresh(url: string, known: ApplicationRecord | undefined, newFrom: string | undefined): Promise<ApplicationRecord> {
    if (!known) {
      const key = registrationBudgetKey(newFrom);
      if (!(await this.counts.reserve(key, this.policy.maxPerHour, this.clock.now(), HOUR_MS))) {
        throw new OAuthError("temporarily_unavailable", `too many new clients from this address: at most ${this.policy.maxPerHour} an hour`, 429);
      }
    }
    try {
      const { metadata, seconds } = await this.fetch(url);
      const app = await this.store(url, metadata, known);
      this.remember(url, { until: this.clock.now() + seconds * 1000 });
      return app;
    } catch (err) {
      if (err instanceof OAuthError && err.code === "invalid_client") {
        this.remember(url, { until: this.clock.now() + METADATA_DOCUMENT_BOUNDS.failureSeconds * 1000, refusal: err });
      }
      throw err;
    }
  }

  private remember(url: string, period: Period): void {
    this.periods.delete(url);
    if (this.periods.size >= METADATA_DOCUMENT_BOUNDS.maxEntries) this.periods.delete(this.periods.keys().next().value!);
    this.periods.set(url, period);
  }

  /** The document, checked, and how long it may be kept. */
  private async fetch(url: string): Promise<{ metadata: ClientMetadata; seconds: number }> {
    // The https-or-loopback rule and no private targets, as for every outbound call (federation/urlRule.ts).
    const publicOnly = !(this.policy.allowInsecure && isLoopback(new URL(url)));
    let answer: { body: Record<string, unknown>; headers: IncomingHttpHeaders };
    try {
      answer = await this.upstream.requestJsonWithHeaders("client_metadata", url, { method: "GET", publicOnly });
    } catch (err) {
      if (err instanceof UpstreamError) throw refused(`the client ID metadata document ${err.reason}`);
      throw err;
    }
    return { metadata: documentMetadata(url, answer.body, { loopbackLogout: this.policy.allowInsecure }), seconds: cacheSeconds(answer.headers["cache-control"]) };
  }

  /** The application row of the document: made, or brought up to date. */
  private async store(url: string, metadata: ClientMetadata, known: ApplicationRecord | undefined): Promise<ApplicationRecord> {
    const current = known ?? (await this.apps.findByClientId(url, true));
    const now = this.clock.now();
    const fields = {
      redirectUris: metadata.redirect_uris,
      grantTypes: metadata.grant_types,
      refreshExpireInHours: metadata.grant_types.includes("refresh_token") ? REGISTERED_REFRESH_HOURS : 0,
      ...registeredPolicy(metadata),
      registration: { metadata: { ...metadata, client_id: url }, accessTokenHash: "", metadataDocument: true as const },
    };
    if (current) {
      if (JSON.stringify(current.registration?.metadata) === JSON.stringify(fields.registration.metadata)) return current;
      const { dpopBoundAccessTokens: _dpop, ...kept } = current;
      const app = { ...kept, ...fields, updatedAt: now };
      await this.apps.update(app, current);
      return app;
    }
    const app = newApplication(url, fields, now);
    try {
      await this.apps.insert(app);
    } catch (err) {
      // Another instance made it meanwhile: theirs stands.
      const made = err instanceof ConflictError ? await this.apps.findByClientId(url, true) : undefined;
      if (made) return made;
      throw err;
    }
    this.audit.record({
      event: "client_registered",
      outcome: "success",
      actor: { kind: "client", id: app.id, name: url },
      clientId: url,
      clientAddress: null,
      details: { clientName: metadata.client_name ?? null, redirectUris: metadata.redirect_uris, metadataDocument: true },
    });
    return app;
  }
}

function newApplication(url: string, fields: Pick<ApplicationRecord, "redirectUris" | "grantTypes" | "refreshExpireInHours" | "registration"> & ReturnType<typeof registeredPolicy>, now: number): ApplicationRecord {
  return applicationRecord({
    id: randomUUID(),
    name: `metadata-document-${sha256(url).slice(0, 24)}`,
    clientId: url,
    clientSecretHash: noSecretHash(),
    ...fields,
    expireInHours: 1,
    publicClient: true,
    tokenEndpointAuthMethod: "none",
    consentRequired: true,
    createdAt: now,
    updatedAt: now,
  });
}

/**
 * The client_id URL's problem, or undefined. Client ID Metadata Document
 * draft §3: https, a path, no dot segments, no fragment, no user
 * information. http only on loopback under --allow-insecure-client-metadata.
 */
export function clientIdUrlProblem(value: string, allowInsecure: boolean): string | undefined {
  if (value.length > METADATA_DOCUMENT_BOUNDS.maxUrlLength) return `is longer than ${METADATA_DOCUMENT_BOUNDS.maxUrlLength} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol !== "https:" && !(allowInsecure && url.protocol === "http:" && isLoopback(url))) return "must be an https URL";
  if (url.username || url.password) return "must not carry credentials";
  if (value.includes("#")) return "must not have a fragment";
  if (url.pathname === "/" || url.pathname === "") return "must have a path";
  if (/\/\.\.?(\/|$|\?)/.test(value.slice(url.origin.length))) return "must not have . or .. path segments";
  if (url.href !== value) return "must be written as a normalized URL";
  return undefined;
}

/**
 * The client metadata of a fetched document, under the registration rules
 * (clientMetadata.ts). Client ID Metadata Document draft §4: its client_id
 * equals the URL, and it names no shared secret: a client_secret, or a
 * secret-based token_endpoint_auth_method, is refused; without one the
 * client is public (`none`).
 */
export function documentMetadata(url: string, document: Record<string, unknown>, rules: { loopbackLogout?: boolean } = {}): ClientMetadata {
  if (document.client_id !== url) {
    throw refused(`the client ID metadata document's client_id ${typeof document.client_id === "string" ? JSON.stringify(echo(document.client_id)) : "is missing, and"} is not the URL it was fetched from`);
  }
  if (document.client_secret !== undefined || document.client_secret_expires_at !== undefined) {
    throw refused("a client ID metadata document must not hold a client_secret");
  }
  const { client_id: _id, ...rest } = document;
  const method = rest.token_endpoint_auth_method ?? "none";
  if (method !== "none") throw refused("a client ID metadata document's client is public: token_endpoint_auth_method must be none");
  try {
    return parseClientMetadata({ ...rest, token_endpoint_auth_method: "none" }, rules);
  } catch (err) {
    if (err instanceof OAuthError) throw refused(`the client ID metadata document: ${err.description}`);
    throw err;
  }
}

/** How long a document is kept: Cache-Control max-age within the bounds (RFC 9111 §5.2.2). */
export function cacheSeconds(cacheControl: string | undefined): number {
  const { minSeconds, defaultSeconds, maxSeconds } = METADATA_DOCUMENT_BOUNDS;
  if (cacheControl === undefined) return defaultSeconds;
  const directives = cacheControl.toLowerCase().split(",").map((d) => d.trim());
  if (directives.some((d) => d === "no-store" || d === "no-cache")) return minSeconds;
  const maxAge = directives.map((d) => /^max-age="?(\d+)"?$/.exec(d)?.[1]).find((v) => v !== undefined);
  if (maxAge === undefined) return defaultSeconds;
  return Math.min(maxSeconds, Math.max(minSeconds, Number(maxAge)));
}
