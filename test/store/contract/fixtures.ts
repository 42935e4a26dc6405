import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { SWEEPS } from "../../../src/store/cleanup.js";
import { ConflictError } from "../../../src/store/errors.js";
import type { FederationStateRecord } from "../../../src/store/federationStates.js";
import type { SessionRecord } from "../../../src/store/sessions.js";
import type { RefreshTokenRecord } from "../../../src/store/tokens.js";
import { isPostgres, type Db } from "../../../src/store/db.js";
import { hash, HOUR, T0 } from "../../support/storeFixtures.js";
import type { ApplicationRecord, ProviderRecord, UserRecord } from "../../../src/shared/model.js";

/** What a cleanup run reports when it deleted nothing, table by table. */
export const NOTHING_SWEPT = Object.fromEntries(SWEEPS.map((sweep) => [sweep.table, 0]));

/**
 * The storage contract: what every repository promises, checked on every
 * backend (test/support/databases.ts BACKENDS), one file per group of
 * repositories:
 *
 * - indexes.spec.ts: an index led by every lookup column (LOOKUP_PATHS below);
 * - applications.spec.ts: applications, what ends with a user or an
 *   application, resources, registration counts;
 * - users.spec.ts: users, search and pages, login failures, action limits,
 *   email links;
 * - federation.spec.ts: providers, federation states, federated identities,
 *   account links;
 * - authorization.spec.ts: authorization codes and requests, device codes,
 *   pushed authorization requests and their cap per client, request object jtis;
 * - tokens.spec.ts: signing keys, access and refresh tokens, rotation,
 *   family revocation, client assertion jtis;
 * - dpop.spec.ts: DPoP proof jtis, the DPoP nonce secret, tokens and codes bound to a key;
 * - sessions.spec.ts: sessions, a user's sign-ins for administration;
 * - backchannelLogouts.spec.ts: a session's clients and the queue of logouts;
 * - cleanup.spec.ts: the cleanup of expired rows.
 *
 * A new repository adds a `describe` block to its group's file (or a file of
 * its own), its lookup columns to LOOKUP_PATHS and, if its rows expire, a
 * case to the cleanup file. Each test makes its own rows (random names and
 * hashes), so the tests of a file share one database per backend.
 */

export const id = () => randomBytes(8).toString("hex");

export const anApplication = (over: Partial<ApplicationRecord> = {}): ApplicationRecord => ({
  id: randomUUID(),
  name: `app-${id()}`,
  clientId: `client-${id()}`,
  clientSecretHash: "scrypt$hash",
  redirectUris: ["https://app.example/cb", "http://127.0.0.1:9999/callback"],
  grantTypes: ["authorization_code", "refresh_token"],
  expireInHours: 2,
  refreshExpireInHours: 24,
  providers: ["github-like"],
  allowedOrigins: ["https://app.example"],
  // Not the default, so a round trip shows the column is read.
  tokenFormat: "JWT",
  signingAlg: "ES256",
  accessTokenStrategy: "opaque",
  publicClient: true,
  mfa: "required",
  consentRequired: true,
  registration: { metadata: { client_name: "Ünïcødé app", redirect_uris: ["https://app.example/cb"] }, accessTokenHash: "a".repeat(64) },
  tokenEndpointAuthMethod: "none",
  jwks: "",
  jwksUri: "",
  clientSecretSealed: "",
  exchangeAudiences: ["client-b", "https://api.example"],
  allowImpersonation: true,
  requirePushedAuthorizationRequests: true,
  backchannelLogoutUri: "https://app.example/backchannel-logout",
  backchannelLogoutSessionRequired: true,
  allowPrivateBackchannelLogoutUri: true,
  profile: "fapi2",
  createdAt: T0,
  updatedAt: T0,
  ...over,
});

export const aUser = (over: Partial<UserRecord> = {}): UserRecord => ({
  id: randomUUID(),
  name: `user-${id()}`,
  passwordHash: "scrypt$pw",
  displayName: "Ünïcødé User",
  email: "u@example.com",
  emailVerified: true,
  avatar: "https://example.com/a.png",
  phone: "+15550100",
  address: "1 Main St",
  isAdmin: false,
  disabled: false,
  properties: { team: "blue" },
  createdAt: T0,
  updatedAt: T0,
  ...over,
});

export const aProvider = (over: Partial<ProviderRecord> = {}): ProviderRecord => ({
  name: `provider-${id()}`,
  type: "Custom",
  displayName: "Provider",
  clientId: "ext-client",
  clientSecret: "sealed-secret",
  authUrl: "https://idp.example/auth",
  scope: "openid email",
  tokenUrl: "https://idp.example/token",
  userInfoUrl: "https://idp.example/userinfo",
  favicon: "https://idp.example/favicon.ico",
  trustEmail: true,
  userMapping: { id: "data.id", email: "emails.0.value" },
  tokenAuthMethod: "client_secret_post",
  pkce: true,
  allowInsecureUrls: false,
  emailsUrl: "",
  issuer: "",
  sharedCallback: true,
  createdAt: T0,
  updatedAt: T0,
  ...over,
});

export const aRefreshToken = (over: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord => ({
  tokenHash: hash(),
  familyId: randomUUID(),
  clientId: "client",
  userId: randomUUID(),
  scope: "openid offline_access",
  authTime: T0 / 1000,
  issuedAt: T0,
  expiresAt: T0 + 24 * HOUR,
  consumedAt: null,
  revokedAt: null,
  ...over,
});

export const aSession = (over: Partial<SessionRecord> = {}): SessionRecord => ({
  idHash: hash(),
  sid: `sid-${id()}`,
  userId: randomUUID(),
  authTime: T0 / 1000,
  createdAt: T0,
  expiresAt: T0 + 8 * HOUR,
  ...over,
});

export const aFederationState = (over: Partial<FederationStateRecord> = {}): FederationStateRecord => ({
  stateHash: hash(),
  provider: `provider-${id()}`,
  bindingHash: hash(),
  authorizationRequestId: id(),
  createdAt: T0,
  expiresAt: T0 + HOUR,
  ...over,
});

/**
 * Every column a query finds rows by, per table. Each must lead an index, or
 * a lookup scans the table. A new repository lists its lookup columns here.
 */
export const LOOKUP_PATHS: Record<string, string[]> = {
  applications: ["id", "client_id", "name"],
  users: ["id", "name", "email"],
  signing_keys: ["kid"],
  providers: ["name"],
  resources: ["uri"],
  registration_counts: ["key"],
  consents: ["user_id", "client_id"],
  // By user: what a password change, a disable or a consent's revocation ends (revocations.ts).
  access_tokens: ["token_hash", "family_id", "expires_at", "user_id"],
  refresh_tokens: ["token_hash", "family_id", "expires_at", "user_id"],
  sessions: ["id_hash", "sid", "expires_at"],
  // Back-channel logout: a session's clients, and the queue by due time.
  session_clients: ["key", "sid", "expires_at"],
  backchannel_logouts: ["id", "next_attempt_at"],
  authorization_codes: ["code_hash", "expires_at"],
  authorization_requests: ["id", "expires_at"],
  login_failures: ["key", "window_started_at"],
  federation_states: ["state_hash", "expires_at"],
  email_links: ["token_hash", "user_id", "expires_at"],
  action_limits: ["key", "window_started_at"],
  client_assertion_jtis: ["key", "expires_at"],
  dpop_proof_jtis: ["key", "expires_at"],
  dpop_nonce_secrets: ["name"],
  device_codes: ["device_code_hash", "user_code", "expires_at"],
  // Counted per client before each push (the cap), found by hash.
  pushed_authorization_requests: ["request_uri_hash", "client_id", "expires_at"],
  request_object_jtis: ["key", "expires_at"],
  // Found by (provider, external_id_type, external_id), listed by user; users by verified email.
  federated_identities: ["provider", "user_id"],
};

/** "table.column" for the first column of every index (primary keys and unique constraints included). */
export async function indexLeadingColumns(db: Db): Promise<Set<string>> {
  if (isPostgres(db)) {
    const { rows } = await db.raw(`
      select t.relname as "table", a.attname as "column"
      from pg_index i
      join pg_class t on t.oid = i.indrelid
      join pg_namespace n on n.oid = t.relnamespace
      join pg_attribute a on a.attrelid = t.oid and a.attnum = i.indkey[0]
      where n.nspname = current_schema()`);
    return new Set(rows.map((r: { table: string; column: string }) => `${r.table}.${r.column}`));
  }
  const leading = new Set<string>();
  for (const table of Object.keys(LOOKUP_PATHS)) {
    for (const index of await db.raw(`pragma index_list(${table})`)) {
      const [first] = await db.raw(`pragma index_info("${index.name}")`);
      leading.add(`${table}.${first.name}`);
    }
  }
  return leading;
}

export async function assertConflict(write: Promise<unknown>, entity: string): Promise<void> {
  await assert.rejects(write, (err: unknown) => err instanceof ConflictError && err.entity === entity);
}
