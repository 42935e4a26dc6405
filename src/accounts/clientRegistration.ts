import { randomUUID } from "node:crypto";
import { noAudit, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { parseClientMetadata, type ClientMetadata } from "../oauth/clientMetadata.js";
import { OAuthError } from "../oauth/errors.js";
import { constantTimeEqual, hashGeneratedSecret, noSecretHash, randomToken, sha256 } from "../oauth/secrets.js";
import type { ApplicationRepository } from "../store/applications.js";
import type { RegistrationCountRepository } from "../store/registrationCounts.js";
import { applicationRecord, type ApplicationRecord } from "../shared/model.js";

/** `--client-registration`: who may register clients (RFC 7591 §3). */
export const CLIENT_REGISTRATION_MODES = ["off", "token", "open"] as const;
export type ClientRegistrationMode = (typeof CLIENT_REGISTRATION_MODES)[number];
export const DEFAULT_REGISTRATIONS_PER_HOUR = 20;

export interface ClientRegistrationPolicy {
  mode: ClientRegistrationMode;
  /** `token` mode: the initial access token (RFC 7591 §3) a registration must bear. */
  token?: string;
  /** Successful registrations per client address per hour. */
  maxPerHour: number;
  /** Tests only (--allow-insecure-client-metadata): a backchannel_logout_uri on a loopback host. */
  loopbackLogout?: boolean;
}

/** What a registration answers (RFC 7591 §3.2.1, RFC 7592 §3). */
export type RegistrationResponse = ClientMetadata & {
  client_id: string;
  client_id_issued_at: number;
  client_secret?: string;
  client_secret_expires_at?: number;
  registration_access_token?: string;
  registration_client_uri: string;
};

const HOUR_MS = 3600_000;
/** A registered client's refresh tokens live this long; its access tokens an hour. */
export const REGISTERED_REFRESH_HOURS = 24 * 14;

/** The registration budget's key for a client address; a client first seen by its metadata document counts against it too. */
export function registrationBudgetKey(clientAddress: string | undefined): string {
  return `registration:${clientAddress ?? "unknown"}`.slice(0, 100);
}
const invalidToken = () => new OAuthError("invalid_token", "the registration access token is missing, wrong or of another client");

/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592).
 * Every registered client is a public or confidential application that
 * needs the user's consent, uses only the code flow, and is named
 * `registered-<client_id>`.
 */
export class ClientRegistrar {
  constructor(
    private readonly apps: ApplicationRepository,
    private readonly counts: RegistrationCountRepository,
    private readonly clock: Clock,
    readonly policy: ClientRegistrationPolicy,
    private readonly registrationUri: (clientId: string) => string,
    private readonly audit: AuditTrail = noAudit,
  ) {}

  /** RFC 7591 §3: whether the caller may register; `initialToken` is its Bearer token. Off is 404. */
  admit(initialToken: string | undefined): void {
    if (this.policy.mode === "off") throw new OAuthError("not_found", "client registration is off");
    if (this.policy.mode === "open") return;
    if (!initialToken || !this.policy.token || !constantTimeEqual(sha256(initialToken), sha256(this.policy.token))) {
      throw new OAuthError("invalid_token", "client registration needs the registration token as a Bearer token");
    }
  }

  /**
   * Register a client from `raw` metadata. The address's budget of
   * successful registrations is taken first, in one statement, and given
   * back when the metadata is refused, so floods and bad requests alike
   * stop at the limit.
   */
  async register(raw: unknown, clientAddress: string | undefined): Promise<RegistrationResponse> {
    const key = registrationBudgetKey(clientAddress);
    if (!(await this.counts.reserve(key, this.policy.maxPerHour, this.clock.now(), HOUR_MS))) {
      throw new OAuthError("temporarily_unavailable", `too many client registrations from this address: at most ${this.policy.maxPerHour} an hour`, 429);
    }
    let metadata: ClientMetadata;
    try {
      metadata = parseClientMetadata(raw, { loopbackLogout: this.policy.loopbackLogout });
    } catch (err) {
      await this.counts.release(key);
      throw err;
    }
    const clientId = randomToken(16);
    const accessToken = randomToken();
    const method = metadata.token_endpoint_auth_method;
    // A public client has no secret, and private_key_jwt authenticates with its keys alone.
    const secret = method === "none" || method === "private_key_jwt" ? undefined : randomToken();
    const now = this.clock.now();
    const app = applicationRecord({
      id: randomUUID(),
      name: `registered-${clientId}`,
      clientId,
      clientSecretHash: secret ? hashGeneratedSecret(secret) : noSecretHash(),
      redirectUris: metadata.redirect_uris,
      grantTypes: metadata.grant_types,
      expireInHours: 1,
      refreshExpireInHours: metadata.grant_types.includes("refresh_token") ? REGISTERED_REFRESH_HOURS : 0,
      publicClient: method === "none",
      tokenEndpointAuthMethod: method,
      ...registeredKeys(metadata),
      ...registeredPolicy(metadata),
      consentRequired: true,
      registration: { metadata: { ...metadata }, accessTokenHash: sha256(accessToken) },
      createdAt: now,
      updatedAt: now,
    });
    await this.apps.insert(app);
    this.audit.record({
      event: "client_registered",
      outcome: "success",
      actor: { kind: "client", id: app.id, name: clientId },
      clientId,
      clientAddress: clientAddress ?? null,
      details: { clientName: metadata.client_name ?? null, redirectUris: metadata.redirect_uris },
    });
    return { ...this.answer(app, metadata), ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}), registration_access_token: accessToken };
  }

  /** RFC 7592 §2.1: the client's registration, for the bearer of its registration access token. */
  async read(clientId: string, token: string | undefined): Promise<RegistrationResponse> {
    const app = await this.owned(clientId, token);
    return this.answer(app, app.registration!.metadata as unknown as ClientMetadata);
  }

  /** RFC 7592 §2.2: replace its metadata; client_id must be its own, and the secret stays. */
  async update(clientId: string, token: string | undefined, raw: unknown): Promise<RegistrationResponse> {
    const current = await this.owned(clientId, token);
    const body = raw as Record<string, unknown> | null;
    if (typeof body === "object" && body !== null && body.client_id !== undefined && body.client_id !== clientId) {
      throw new OAuthError("invalid_request", "client_id must be the registered client's own");
    }
    const { client_id: _id, client_secret: _secret, ...rest } = (body ?? {}) as Record<string, unknown>;
    const metadata = parseClientMetadata(rest, { loopbackLogout: this.policy.loopbackLogout });
    if ((metadata.token_endpoint_auth_method === "private_key_jwt") !== (current.tokenEndpointAuthMethod === "private_key_jwt") || (metadata.token_endpoint_auth_method === "none") !== current.publicClient) {
      throw new OAuthError("invalid_client_metadata", "token_endpoint_auth_method cannot change between none, a secret and private_key_jwt: register a new client");
    }
    // The flags are replaced with the rest: one left out is off (RFC 7592 §2.2).
    const { dpopBoundAccessTokens: _dpop, ...kept } = current;
    const app: ApplicationRecord = {
      ...kept,
      redirectUris: metadata.redirect_uris,
      grantTypes: metadata.grant_types,
      refreshExpireInHours: metadata.grant_types.includes("refresh_token") ? REGISTERED_REFRESH_HOURS : 0,
      tokenEndpointAuthMethod: metadata.token_endpoint_auth_method,
      ...registeredKeys(metadata),
      ...registeredPolicy(metadata),
      registration: { metadata: { ...metadata }, accessTokenHash: current.registration!.accessTokenHash },
      updatedAt: this.clock.now(),
    };
    await this.apps.update(app, current);
    return this.answer(app, metadata);
  }

  /** RFC 7592 §2.3: delete it; every token issued to it is revoked with it. */
  async delete(clientId: string, token: string | undefined): Promise<void> {
    const app = await this.owned(clientId, token);
    await this.apps.deleteByName(app.name, this.clock.now());
  }

  /** The registered client whose registration access token this is; anything else is invalid_token (RFC 7592 §3). */
  private async owned(clientId: string, token: string | undefined): Promise<ApplicationRecord> {
    const app = await this.apps.findByClientId(clientId, true);
    const expected = app?.registration?.accessTokenHash;
    if (!token || !expected || !constantTimeEqual(sha256(token), expected)) throw invalidToken();
    return app!;
  }

  /** The metadata it registered, with the flags and logout URI as the application has them now (an administrator may have changed them). */
  private answer(app: ApplicationRecord, metadata: ClientMetadata): RegistrationResponse {
    const { backchannel_logout_uri: _uri, ...registered } = metadata;
    return {
      ...registered,
      ...(app.backchannelLogoutUri ? { backchannel_logout_uri: app.backchannelLogoutUri } : {}),
      backchannel_logout_session_required: app.backchannelLogoutSessionRequired,
      dpop_bound_access_tokens: app.dpopBoundAccessTokens ?? false,
      require_pushed_authorization_requests: app.requirePushedAuthorizationRequests ?? false,
      client_id: app.clientId,
      client_id_issued_at: Math.floor(app.createdAt / 1000),
      registration_client_uri: this.registrationUri(app.clientId),
    };
  }
}

/** A private_key_jwt client's keys, as an application keeps them; other methods keep none (clientAuthMethod.ts). */
function registeredKeys(metadata: ClientMetadata): Pick<ApplicationRecord, "jwks" | "jwksUri"> {
  if (metadata.token_endpoint_auth_method !== "private_key_jwt") return { jwks: "", jwksUri: "" };
  return { jwks: metadata.jwks ? JSON.stringify(metadata.jwks) : "", jwksUri: metadata.jwks_uri ?? "" };
}

type RegisteredPolicy = Pick<
  ApplicationRecord,
  "requirePushedAuthorizationRequests" | "dpopBoundAccessTokens" | "backchannelLogoutUri" | "backchannelLogoutSessionRequired" | "allowPrivateBackchannelLogoutUri"
>;

/**
 * What a client's metadata asks of the service, as an application keeps it:
 * PAR (RFC 9126 §6), DPoP (RFC 9449 §5.2), back-channel logout
 * (Back-Channel Logout 1.0 §2.2). A private logout address is an
 * administrator's leave alone: a client that registers itself never has it.
 */
export function registeredPolicy(metadata: ClientMetadata): RegisteredPolicy {
  return {
    requirePushedAuthorizationRequests: metadata.require_pushed_authorization_requests,
    ...(metadata.dpop_bound_access_tokens ? { dpopBoundAccessTokens: true } : {}),
    backchannelLogoutUri: metadata.backchannel_logout_uri ?? "",
    backchannelLogoutSessionRequired: metadata.backchannel_logout_session_required,
    allowPrivateBackchannelLogoutUri: false,
  };
}
