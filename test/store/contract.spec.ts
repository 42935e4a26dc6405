import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { CleanupJob } from "../../src/app/housekeeping.js";
import { silentLogger } from "../../src/shared/log.js";
import { setTimeout } from "node:timers/promises";
import { APPLICATION_CACHE_MS } from "../../src/store/applications.js";
import { deleteExpired, SWEEPS } from "../../src/store/cleanup.js";
import type { AuthorizationCodeRecord } from "../../src/store/authorizationCodes.js";
import { ConflictError } from "../../src/store/errors.js";
import type { FederationStateRecord } from "../../src/store/federationStates.js";
import type { AccountLinkRequest } from "../../src/store/accountLinks.js";
import type { SessionRecord } from "../../src/store/sessions.js";
import type { EmailLinkRecord } from "../../src/store/emailLinks.js";
import type { RefreshTokenRecord } from "../../src/store/tokens.js";
import { isPostgres, type Db } from "../../src/store/db.js";
import { createStore } from "../../src/store/index.js";
import { FakeClock } from "../support/clock.js";
import { describeEachBackend } from "../support/databases.js";
import { anAccessToken, hash, HOUR, T0 } from "../support/storeFixtures.js";
import type { DeviceCodeRecord } from "../../src/store/deviceCodes.js";
import type { ApplicationRecord, FederatedIdentityRecord, ProviderRecord, UserRecord } from "../../src/shared/model.js";

/** What a cleanup run reports when it deleted nothing, table by table. */
const NOTHING_SWEPT = Object.fromEntries(SWEEPS.map((sweep) => [sweep.table, 0]));

/**
 * The storage contract: what every repository promises, checked on every
 * backend (test/support/databases.ts BACKENDS). Nothing is written per
 * backend. A new repository adds one `describe` block inside the body below,
 * its lookup columns to LOOKUP_PATHS and, if its rows expire, a case to the
 * cleanup block. Each test makes its own rows (random names and hashes), so
 * tests share one database per backend without seeing each other.
 */

const id = () => randomBytes(8).toString("hex");

const anApplication = (over: Partial<ApplicationRecord> = {}): ApplicationRecord => ({
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
  createdAt: T0,
  updatedAt: T0,
  ...over,
});

const aUser = (over: Partial<UserRecord> = {}): UserRecord => ({
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

const aProvider = (over: Partial<ProviderRecord> = {}): ProviderRecord => ({
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

const aRefreshToken = (over: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord => ({
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

const aSession = (over: Partial<SessionRecord> = {}): SessionRecord => ({
  idHash: hash(),
  userId: randomUUID(),
  authTime: T0 / 1000,
  createdAt: T0,
  expiresAt: T0 + 8 * HOUR,
  ...over,
});

const aFederationState = (over: Partial<FederationStateRecord> = {}): FederationStateRecord => ({
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
const LOOKUP_PATHS: Record<string, string[]> = {
  applications: ["id", "client_id", "name"],
  users: ["id", "name", "email"],
  signing_keys: ["kid"],
  providers: ["name"],
  resources: ["uri"],
  registration_counts: ["key"],
  access_tokens: ["token_hash", "family_id", "expires_at"],
  refresh_tokens: ["token_hash", "family_id", "expires_at"],
  sessions: ["id_hash", "expires_at"],
  authorization_codes: ["code_hash", "expires_at"],
  authorization_requests: ["id", "expires_at"],
  login_failures: ["key", "window_started_at"],
  federation_states: ["state_hash", "expires_at"],
  email_links: ["token_hash", "user_id", "expires_at"],
  action_limits: ["key", "window_started_at"],
  client_assertion_jtis: ["key", "expires_at"],
  device_codes: ["device_code_hash", "user_code", "expires_at"],
  // Found by (provider, external_id_type, external_id), listed by user; users by verified email.
  federated_identities: ["provider", "user_id"],
};

/** "table.column" for the first column of every index (primary keys and unique constraints included). */
async function indexLeadingColumns(db: Db): Promise<Set<string>> {
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

async function assertConflict(write: Promise<unknown>, entity: string): Promise<void> {
  await assert.rejects(write, (err: unknown) => err instanceof ConflictError && err.entity === entity);
}

describeEachBackend("storage contract", (ctx) => {
  it("has an index led by every lookup column", async () => {
    const indexed = await indexLeadingColumns(ctx.db);
    const missing = Object.entries(LOOKUP_PATHS).flatMap(([table, columns]) => columns.map((c) => `${table}.${c}`)).filter((c) => !indexed.has(c));
    assert.deepEqual(missing, []);
  });

  describe("applications", () => {
    it("round-trips every field and finds by client id and by name", async () => {
      const app = anApplication();
      await ctx.store.applications.insert(app);
      assert.deepEqual(await ctx.store.applications.findByClientId(app.clientId), app);
      assert.deepEqual(await ctx.store.applications.findByName(app.name), app);
      assert.equal(await ctx.store.applications.findByClientId(`missing-${id()}`), undefined);
    });

    it("updates and deletes by name", async () => {
      const app = anApplication();
      await ctx.store.applications.insert(app);
      const changed = { ...app, redirectUris: [], grantTypes: ["authorization_code"], expireInHours: 5, publicClient: false, updatedAt: T0 + 1 };
      await ctx.store.applications.update(changed);
      assert.deepEqual(await ctx.store.applications.findByName(app.name), changed);
      assert.ok((await ctx.store.applications.list()).some((a) => a.name === app.name));
      assert.equal(await ctx.store.applications.deleteByName(app.name), true);
      assert.equal(await ctx.store.applications.deleteByName(app.name), false);
      assert.equal(await ctx.store.applications.findByName(app.name), undefined);
    });

    it("revokes the refresh tokens of an application that turns public, in the same update, and no other client's", async () => {
      const app = anApplication({ publicClient: false });
      await ctx.store.applications.insert(app);
      const mine = aRefreshToken({ clientId: app.clientId });
      const others = aRefreshToken({ clientId: `other-${id()}` });
      for (const token of [mine, others]) await ctx.store.refreshTokens.insert(token);
      await ctx.store.applications.update({ ...app, expireInHours: 3, updatedAt: T0 + 2 }, app);
      assert.equal((await ctx.store.refreshTokens.findByHash(mine.tokenHash))?.revokedAt, null, "another change ends nothing");
      await ctx.store.applications.update({ ...app, publicClient: true, updatedAt: T0 + 3 }, app);
      assert.equal((await ctx.store.refreshTokens.findByHash(mine.tokenHash))?.revokedAt, T0 + 3);
      assert.equal((await ctx.store.refreshTokens.findByHash(others.tokenHash))?.revokedAt, null);
    });

    it("refuses a second application with the same name or client id", async () => {
      const app = anApplication();
      await ctx.store.applications.insert(app);
      await assertConflict(ctx.store.applications.insert(anApplication({ name: app.name })), "application");
      await assertConflict(ctx.store.applications.insert(anApplication({ clientId: app.clientId })), "application");
      const other = anApplication();
      await ctx.store.applications.insert(other);
      await assertConflict(ctx.store.applications.update({ ...other, clientId: app.clientId }), "application");
    });

    it("answers a lookup by client id with its own changes at once, and another instance's within the cache bound", async () => {
      const app = anApplication();
      await ctx.store.applications.insert(app);
      assert.equal((await ctx.store.applications.findByClientId(app.clientId))!.expireInHours, app.expireInHours);
      await ctx.store.applications.update({ ...app, expireInHours: 7 });
      assert.equal((await ctx.store.applications.findByClientId(app.clientId))!.expireInHours, 7);

      const otherInstance = createStore(ctx.db);
      try {
        await otherInstance.applications.update({ ...app, expireInHours: 9 });
        await setTimeout(APPLICATION_CACHE_MS + 50);
        assert.equal((await ctx.store.applications.findByClientId(app.clientId))!.expireInHours, 9);
      } finally {
        await otherInstance.close();
      }
    });

    it("collects every application's allowed origins, its own changes at once and another instance's within the cache bound", async () => {
      const [a, b] = [`https://a-${id()}.example`, `https://b-${id()}.example`];
      const app = anApplication({ allowedOrigins: [a] });
      await ctx.store.applications.insert(app);
      await ctx.store.applications.insert(anApplication({ allowedOrigins: [a, b] }));
      await ctx.store.applications.insert(anApplication({ allowedOrigins: [] }));
      const origins = await ctx.store.applications.allowedOrigins();
      assert.ok(origins.has(a) && origins.has(b));
      assert.equal(ctx.store.applications.allowedOrigins(), origins, "answered from the cache, without a query");

      const c = `https://c-${id()}.example`;
      await ctx.store.applications.update({ ...app, allowedOrigins: [c] });
      assert.ok((await ctx.store.applications.allowedOrigins()).has(c), "its own write is seen at once");

      const otherInstance = createStore(ctx.db);
      try {
        await otherInstance.applications.update({ ...app, allowedOrigins: [] });
        assert.ok((await ctx.store.applications.allowedOrigins()).has(c), "another instance's write waits for the cache bound");
        await setTimeout(APPLICATION_CACHE_MS + 50);
        assert.equal((await ctx.store.applications.allowedOrigins()).has(c), false);
      } finally {
        await otherInstance.close();
      }
    });
  });

  describe("users", () => {
    it("round-trips every field, booleans and JSON properties included", async () => {
      const user = aUser({ isAdmin: true, emailVerified: false, passwordHash: null });
      await ctx.store.users.insert(user);
      assert.deepEqual(await ctx.store.users.findById(user.id), user);
      assert.deepEqual(await ctx.store.users.findByName(user.name), user);
    });

    it("updates, lists and deletes", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const changed = { ...user, disabled: true, properties: {}, updatedAt: T0 + 5 };
      await ctx.store.users.update(changed);
      assert.deepEqual(await ctx.store.users.findById(user.id), changed);
      assert.ok((await ctx.store.users.list()).some((u) => u.id === user.id));
      assert.equal(await ctx.store.users.deleteByName(user.name), true);
      assert.equal(await ctx.store.users.findById(user.id), undefined);
    });

    it("refuses a second user with the same name", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      await assertConflict(ctx.store.users.insert(aUser({ name: user.name })), "user");
    });

    it("finds users by exact verified email, and tells which names are taken", async () => {
      const email = `${id()}@example.com`;
      const verified = aUser({ email });
      const unverified = aUser({ email, emailVerified: false });
      const otherCase = aUser({ email: email.toUpperCase() });
      for (const u of [verified, unverified, otherCase]) await ctx.store.users.insert(u);
      assert.deepEqual(await ctx.store.users.findByVerifiedEmail(email), [verified]);
      assert.deepEqual(await ctx.store.users.takenNames([verified.name, `free-${id()}`]), new Set([verified.name]));
    });
  });

  describe("what ends with a user or an application", () => {
    /** A user with a refresh token, an access token and a session, and a bystander with the same. */
    async function signedIn(clientId = "client") {
      const rows = () => {
        const user = aUser();
        return {
          user,
          refresh: aRefreshToken({ userId: user.id, clientId }),
          access: anAccessToken({ userId: user.id, clientId }),
          session: aSession({ userId: user.id }),
        };
      };
      const [mine, bystander] = [rows(), rows()];
      for (const r of [mine, bystander]) {
        await ctx.store.users.insert(r.user);
        await ctx.store.refreshTokens.insert(r.refresh);
        await ctx.store.accessTokens.insert(r.access);
        await ctx.store.sessions.insert(r.session);
      }
      return { mine, bystander };
    }
    const state = async (r: Awaited<ReturnType<typeof signedIn>>["mine"]) => ({
      refresh: (await ctx.store.refreshTokens.findByHash(r.refresh.tokenHash))?.revokedAt ?? null,
      access: (await ctx.store.accessTokens.findByHash(r.access.tokenHash))?.revokedAt ?? null,
      session: (await ctx.store.sessions.findByHash(r.session.idHash)) !== undefined,
    });

    it("ends a user's sign-ins (refresh tokens, sessions) with an update that asks, its access tokens too when asked, and nobody else's", async () => {
      const { mine, bystander } = await signedIn();
      await ctx.store.users.update({ ...mine.user, displayName: "Renamed" });
      assert.deepEqual(await state(mine), { refresh: null, access: null, session: true }, "a plain update ends nothing");
      await ctx.store.users.update({ ...mine.user, passwordHash: "scrypt$new" }, { at: T0 + 7, signIns: true });
      assert.deepEqual(await state(mine), { refresh: T0 + 7, access: null, session: false });
      await ctx.store.users.update({ ...mine.user, disabled: true }, { at: T0 + 8, signIns: true, accessTokens: true });
      assert.deepEqual(await state(mine), { refresh: T0 + 7, access: T0 + 8, session: false }, "a revocation keeps its first time");
      assert.deepEqual(await state(bystander), { refresh: null, access: null, session: true });
      assert.equal((await ctx.store.users.findById(mine.user.id))?.disabled, true);
    });

    it("deletes a user with its refresh tokens revoked and its sessions ended, and nobody else's", async () => {
      const { mine, bystander } = await signedIn();
      assert.equal(await ctx.store.users.deleteByName(mine.user.name, T0 + 9), true);
      assert.equal(await ctx.store.users.deleteByName(mine.user.name, T0 + 9), false);
      assert.deepEqual(await state(mine), { refresh: T0 + 9, access: null, session: false });
      assert.deepEqual(await state(bystander), { refresh: null, access: null, session: true });
    });

    it("deletes an application with every token of its client id revoked, and no other client's", async () => {
      const app = anApplication();
      await ctx.store.applications.insert(app);
      const { mine } = await signedIn(app.clientId);
      const { mine: otherClients } = await signedIn();
      const clientToken = anAccessToken({ clientId: app.clientId, userId: null, familyId: null });
      await ctx.store.accessTokens.insert(clientToken);
      assert.equal(await ctx.store.applications.deleteByName(app.name, T0 + 10), true);
      assert.equal(await ctx.store.applications.deleteByName(app.name, T0 + 10), false);
      assert.deepEqual(await state(mine), { refresh: T0 + 10, access: T0 + 10, session: true });
      assert.equal((await ctx.store.accessTokens.findByHash(clientToken.tokenHash))?.revokedAt, T0 + 10);
      assert.deepEqual(await state(otherClients), { refresh: null, access: null, session: true });
    });
  });

  describe("providers", () => {
    it("round-trips, updates and deletes", async () => {
      const provider = aProvider();
      await ctx.store.providers.insert(provider);
      assert.deepEqual(await ctx.store.providers.findByName(provider.name), provider);
      const changed = { ...provider, trustEmail: false, scope: "email", updatedAt: T0 + 1 };
      await ctx.store.providers.update(changed);
      assert.deepEqual(await ctx.store.providers.findByName(provider.name), changed);
      assert.equal(await ctx.store.providers.deleteByName(provider.name), true);
      assert.equal(await ctx.store.providers.findByName(provider.name), undefined);
    });

    it("refuses a second provider with the same name", async () => {
      const provider = aProvider();
      await ctx.store.providers.insert(provider);
      await assertConflict(ctx.store.providers.insert(aProvider({ name: provider.name })), "provider");
    });
  });

  describe("resources", () => {
    const aResource = () => ({ uri: `https://api-${id()}.example/`, name: "API", scopes: [{ name: "api:read", description: "Read" }], createdAt: T0, updatedAt: T0 });

    it("round-trips, updates, finds several at once and deletes", async () => {
      const [one, two] = [aResource(), aResource()];
      await ctx.store.resources.insert(one);
      await ctx.store.resources.insert(two);
      assert.deepEqual(await ctx.store.resources.findByUri(one.uri), one);
      const found = await ctx.store.resources.findByUris([one.uri, two.uri, "https://none.example/"]);
      assert.deepEqual(found.map((r) => r.uri).sort(), [one.uri, two.uri].sort());
      const changed = { ...one, name: "Renamed", scopes: [], updatedAt: T0 + 1 };
      assert.equal(await ctx.store.resources.update(changed), true);
      assert.deepEqual(await ctx.store.resources.findByUri(one.uri), changed);
      assert.equal(await ctx.store.resources.deleteByUri(one.uri), true);
      assert.equal(await ctx.store.resources.deleteByUri(one.uri), false);
      assert.equal(await ctx.store.resources.findByUri(one.uri), undefined);
      assert.equal(await ctx.store.resources.update(changed), false);
    });

    it("refuses a second resource with the same URI", async () => {
      const resource = aResource();
      await ctx.store.resources.insert(resource);
      await assertConflict(ctx.store.resources.insert({ ...resource, name: "Other" }), "resource");
    });

    it("keeps the resources of a code, a refresh token and an access token", async () => {
      const resources = ["https://a.example/", "https://b.example/mcp"];
      const refresh = aRefreshToken({ resources });
      await ctx.store.refreshTokens.insert(refresh);
      assert.deepEqual((await ctx.store.refreshTokens.findByHash(refresh.tokenHash))?.resources, resources);
      const access = anAccessToken({ resources });
      await ctx.store.accessTokens.insert(access);
      assert.deepEqual((await ctx.store.accessTokens.findByHash(access.tokenHash))?.resources, resources);
      assert.deepEqual((await ctx.store.accessTokens.findStandingByHash(access.tokenHash))?.token.resources, resources);
    });
  });

  describe("registration counts", () => {
    it("lets exactly max of 40 concurrent reservations of one key through, gives one back, and starts a new window", async () => {
      const key = `registration:${id()}`;
      const results = await Promise.all(Array.from({ length: 40 }, () => ctx.store.registrationCounts.reserve(key, 5, T0, HOUR)));
      assert.equal(results.filter(Boolean).length, 5);
      assert.equal(await ctx.store.registrationCounts.reserve(key, 5, T0 + 1, HOUR), false);
      await ctx.store.registrationCounts.release(key);
      assert.equal(await ctx.store.registrationCounts.reserve(key, 5, T0 + 2, HOUR), true);
      assert.equal(await ctx.store.registrationCounts.reserve(key, 5, T0 + 3, HOUR), false);
      assert.equal(await ctx.store.registrationCounts.reserve(key, 5, T0 + HOUR, HOUR), true, "a window that has ended starts afresh");
    });
  });

  describe("federation states", () => {
    it("round-trips by hash, with or without a pending request", async () => {
      const browser = aFederationState();
      const rpc = aFederationState({ authorizationRequestId: null });
      for (const s of [browser, rpc]) await ctx.store.federationStates.insert(s);
      assert.deepEqual(await ctx.store.federationStates.findByHash(browser.stateHash), browser);
      assert.deepEqual(await ctx.store.federationStates.findByHash(rpc.stateHash), rpc);
      assert.equal(await ctx.store.federationStates.findByHash(hash()), undefined);
    });

    it("lets exactly one of 50 concurrent takes of one state win", async () => {
      const state = aFederationState();
      await ctx.store.federationStates.insert(state);
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.federationStates.take(state.stateHash)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.federationStates.findByHash(state.stateHash), undefined);
    });
  });

  describe("authorization codes", () => {
    const aCode = (over: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord => ({
      codeHash: hash(),
      familyId: randomUUID(),
      clientId: "client",
      userId: randomUUID(),
      redirectUri: "https://app.example/cb",
      scope: "openid",
      nonce: "n-0",
      codeChallenge: "challenge",
      codeChallengeMethod: "S256",
      authTime: T0 / 1000,
      claims: null,
      createdAt: T0,
      expiresAt: T0 + 60_000,
      consumedAt: null,
      replayedAt: null,
      ...over,
    });

    it("round-trips by hash, with or without a nonce and a challenge", async () => {
      const withAll = aCode({ claims: '{"id_token":{"name":null}}', resources: ["https://a.example/", "https://b.example/"] });
      const bare = aCode({ nonce: null, codeChallenge: null, codeChallengeMethod: null });
      for (const c of [withAll, bare]) await ctx.store.authorizationCodes.insert(c);
      assert.deepEqual(await ctx.store.authorizationCodes.findByHash(withAll.codeHash), withAll);
      assert.deepEqual(await ctx.store.authorizationCodes.findByHash(bare.codeHash), bare);
      assert.equal(await ctx.store.authorizationCodes.findByHash(hash()), undefined);
    });

    it("lets exactly one of 50 concurrent consumes of one code win, and none after it", async () => {
      const code = aCode();
      await ctx.store.authorizationCodes.insert(code);
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => ctx.store.authorizationCodes.consume(code.codeHash, T0 + i)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal((await ctx.store.authorizationCodes.findByHash(code.codeHash))?.consumedAt, T0 + results.indexOf(true));
      assert.equal(await ctx.store.authorizationCodes.consume(code.codeHash, T0 + 100), false);
      assert.equal(await ctx.store.authorizationCodes.consume(hash(), T0), false);
    });

    it("records a replay once, keeping its first time", async () => {
      const code = aCode({ consumedAt: T0 });
      await ctx.store.authorizationCodes.insert(code);
      assert.equal(await ctx.store.authorizationCodes.wasReplayed(code.codeHash), false);
      await ctx.store.authorizationCodes.markReplayed(code.codeHash, T0 + 1);
      await ctx.store.authorizationCodes.markReplayed(code.codeHash, T0 + 2);
      assert.equal(await ctx.store.authorizationCodes.wasReplayed(code.codeHash), true);
      assert.equal((await ctx.store.authorizationCodes.findByHash(code.codeHash))?.replayedAt, T0 + 1);
    });
  });

  describe("authorization requests", () => {
    it("round-trips by id, and lets exactly one of 50 concurrent takes of one request win", async () => {
      const request = { id: id(), csrfHash: hash(), request: '{"client_id":"c"}', createdAt: T0, expiresAt: T0 + HOUR };
      await ctx.store.authorizationRequests.insert(request);
      assert.deepEqual(await ctx.store.authorizationRequests.findById(request.id), request);
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.authorizationRequests.take(request.id)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.authorizationRequests.findById(request.id), undefined);
    });
  });

  describe("federated identities", () => {
    const aLink = (provider: ProviderRecord, user: UserRecord, over: Partial<FederatedIdentityRecord> = {}): FederatedIdentityRecord => ({
      provider: provider.name,
      externalIdType: "sub",
      externalId: `ext-${id()}`,
      userId: user.id,
      username: "upstream-name",
      createdAt: T0,
      updatedAt: T0,
      ...over,
    });

    it("round-trips, lists by user, updates the username, and refuses a second link of one account", async () => {
      const provider = aProvider();
      const user = aUser();
      await ctx.store.providers.insert(provider);
      await ctx.store.users.insert(user);
      const bySub = aLink(provider, user);
      const byName = aLink(provider, user, { externalIdType: "preferred_username", externalId: bySub.externalId });
      await ctx.store.federatedIdentities.insert(bySub);
      await ctx.store.federatedIdentities.insert(byName);
      assert.deepEqual(await ctx.store.federatedIdentities.find(bySub), bySub);
      assert.deepEqual(await ctx.store.federatedIdentities.find(byName), byName, "a sub never passes for a preferred_username");
      assert.deepEqual(await ctx.store.federatedIdentities.listByUser(user.id), [byName, bySub]);
      await ctx.store.federatedIdentities.updateUsername(bySub, "renamed", T0 + 5);
      assert.deepEqual(await ctx.store.federatedIdentities.find(bySub), { ...bySub, username: "renamed", updatedAt: T0 + 5 });
      await assertConflict(ctx.store.federatedIdentities.insert(aLink(provider, aUser(), { externalId: bySub.externalId })), "federated identity");
    });

    it("goes with its user or its provider", async () => {
      const provider = aProvider();
      const [kept, deleted] = [aUser(), aUser()];
      await ctx.store.providers.insert(provider);
      for (const u of [kept, deleted]) await ctx.store.users.insert(u);
      const [keptLink, deletedLink] = [aLink(provider, kept), aLink(provider, deleted)];
      for (const l of [keptLink, deletedLink]) await ctx.store.federatedIdentities.insert(l);
      await ctx.store.users.deleteByName(deleted.name);
      assert.equal(await ctx.store.federatedIdentities.find(deletedLink), undefined);
      assert.ok(await ctx.store.federatedIdentities.find(keptLink));
      await ctx.store.providers.deleteByName(provider.name);
      assert.equal(await ctx.store.federatedIdentities.find(keptLink), undefined);
      assert.ok(await ctx.store.users.findById(kept.id), "the user stays");
    });

    it("joins a caller's transaction: a rolled-back user and link leave no row", async () => {
      const provider = aProvider();
      await ctx.store.providers.insert(provider);
      const user = aUser();
      const link = aLink(provider, user);
      await assert.rejects(
        ctx.db.transaction(async (trx) => {
          await ctx.store.users.insert(user, trx);
          await ctx.store.federatedIdentities.insert(link, trx);
          throw new Error("roll back");
        }),
        /roll back/,
      );
      assert.equal(await ctx.store.users.findById(user.id), undefined);
      assert.equal(await ctx.store.federatedIdentities.find(link), undefined);
    });
  });

  describe("account links", () => {
    const request = (provider: ProviderRecord, over: Partial<AccountLinkRequest> = {}): AccountLinkRequest => {
      const { name, ...newUser } = aUser({ passwordHash: null });
      return { key: { provider: provider.name, externalIdType: "sub", externalId: `ext-${id()}` }, username: "up", at: T0, newUser, names: [name], fallbackName: `${name}-x`, ...over };
    };
    const withProvider = async () => {
      const provider = aProvider();
      await ctx.store.providers.insert(provider);
      return provider;
    };

    it("creates a user under the first free name and links it; a known account gets its user, the link noting the new provider name", async () => {
      const provider = await withProvider();
      const taken = aUser();
      await ctx.store.users.insert(taken);
      const first = request(provider, { names: [taken.name, `free-${id()}`] });
      const made = await ctx.store.accountLinks.link(first);
      assert.equal(made.created, true);
      assert.equal(made.user.name, first.names[1]);
      assert.deepEqual(await ctx.store.users.findById(made.user.id), made.user);
      const again = await ctx.store.accountLinks.link({ ...first, username: "renamed", at: T0 + 5, newUser: { ...first.newUser, id: randomUUID() } });
      assert.deepEqual([again.created, again.user.id, again.identity.username], [false, made.user.id, "renamed"]);
      assert.equal((await ctx.store.federatedIdentities.find(first.key))?.username, "renamed");
    });

    it("takes the fallback name when every name is taken", async () => {
      const provider = await withProvider();
      const taken = aUser();
      await ctx.store.users.insert(taken);
      const asked = request(provider, { names: [taken.name] });
      assert.equal((await ctx.store.accountLinks.link(asked)).user.name, asked.fallbackName);
    });

    it("selects by trusted email exactly one non-admin user who verified it; ambiguity and admins never match", async () => {
      const provider = await withProvider();
      const [single, twinA, twinB, admin] = [`s-${id()}@x.example`, `t-${id()}@x.example`, `t-${id()}@x.example`, `a-${id()}@x.example`];
      const owner = aUser({ email: single, emailVerified: true });
      const twins = [aUser({ email: twinA, emailVerified: true }), aUser({ email: twinA, emailVerified: true })];
      const boss = aUser({ email: admin, emailVerified: true, isAdmin: true });
      for (const u of [owner, ...twins, boss]) await ctx.store.users.insert(u);
      const matched = await ctx.store.accountLinks.link(request(provider, { trustedEmail: single }));
      assert.deepEqual([matched.created, matched.user.id], [false, owner.id]);
      for (const email of [twinA, admin, twinB]) assert.equal((await ctx.store.accountLinks.link(request(provider, { trustedEmail: email }))).created, true, email);
    });

    it("writes nothing for a disabled user, found by link or by email", async () => {
      const provider = await withProvider();
      const email = `d-${id()}@x.example`;
      const disabled = aUser({ email, emailVerified: true, disabled: true });
      await ctx.store.users.insert(disabled);
      const byEmail = request(provider, { trustedEmail: email });
      assert.equal((await ctx.store.accountLinks.link(byEmail)).user.id, disabled.id);
      assert.equal(await ctx.store.federatedIdentities.find(byEmail.key), undefined);
      const linked = { ...byEmail.key, externalId: `ext-${id()}`, userId: disabled.id, username: "old", createdAt: T0, updatedAt: T0 };
      await ctx.store.federatedIdentities.insert(linked);
      const byLink = await ctx.store.accountLinks.link(request(provider, { key: linked, username: "new" }));
      assert.deepEqual([byLink.user.id, (await ctx.store.federatedIdentities.find(linked))?.username], [disabled.id, "old"]);
    });

    it("lets one of 10 concurrent first sign-ins of one account create the user; the others conflict, write nothing, and a retry finds the winner", async () => {
      const provider = await withProvider();
      const key = { provider: provider.name, externalIdType: "sub" as const, externalId: `ext-${id()}` };
      const attempts = Array.from({ length: 10 }, () => request(provider, { key, names: [`race-${id()}`] }));
      const results = await Promise.allSettled(attempts.map((a) => ctx.store.accountLinks.link(a)));
      const won = results.flatMap((r) => (r.status === "fulfilled" && r.value.created ? [r.value] : []));
      assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.status)));
      for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof ConflictError, String(r.reason));
      for (const a of attempts) if (a.names[0] !== won[0]!.user.name) assert.equal(await ctx.store.users.findByName(a.names[0]!), undefined);
      const retried = await ctx.store.accountLinks.link(attempts[0]!);
      assert.deepEqual([retried.created, retried.user.id], [false, won[0]!.user.id]);
    });
  });

  describe("signing keys", () => {
    it("lists newest first, with retirement times as numbers or null", async () => {
      const older = { kid: `k-${id()}`, alg: "RS256", privateJwk: "{}", publicJwk: "{}", createdAt: T0 - 10, activeFrom: T0 - 10, retiredAt: T0 };
      const newer = { ...older, kid: `k-${id()}`, createdAt: T0 + 10, activeFrom: T0 + 10, retiredAt: null };
      await ctx.store.signingKeys.insert(older);
      await ctx.store.signingKeys.insert(newer);
      const listed = (await ctx.store.signingKeys.list()).filter((k) => k.kid === older.kid || k.kid === newer.kid);
      assert.deepEqual(listed, [newer, older]);
    });
    it("retires an unused key once, however many race to, and not before the latest bound holdUntil set", async () => {
      // Later than every token the other tests make: none of them holds the key.
      const later = T0 + 100_000 * HOUR;
      const key = { kid: `k-${id()}`, alg: "RS256", privateJwk: "{}", publicJwk: "{}", createdAt: T0, activeFrom: T0, retiredAt: null };
      await ctx.store.signingKeys.insert(key);
      await ctx.store.signingKeys.holdUntil(key.kid, later + 100);
      await ctx.store.signingKeys.holdUntil(key.kid, later + 50);
      assert.equal(await ctx.store.signingKeys.retireIfUnused(key.kid, later + 99), false, "an earlier bound does not replace a later one");
      const results = await Promise.all(Array.from({ length: 20 }, () => ctx.store.signingKeys.retireIfUnused(key.kid, later + 100)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal((await ctx.store.signingKeys.list()).find((k) => k.kid === key.kid)?.retiredAt, later + 100);
    });
  });

  describe("access tokens", () => {
    it("round-trips by hash, with expiry and revocation times, in a family or in none", async () => {
      for (const token of [anAccessToken({ userId: null }), anAccessToken({ userId: null, familyId: null })]) {
        await ctx.store.accessTokens.insert(token);
        assert.deepEqual(await ctx.store.accessTokens.findByHash(token.tokenHash), token);
      }
      assert.equal(await ctx.store.accessTokens.findByHash(hash()), undefined);
    });

    it("finds a token with its user in one read: none for a client's token or a deleted user", async () => {
      const user = aUser({ disabled: true });
      await ctx.store.users.insert(user);
      const [userToken, clientToken, orphanToken] = [anAccessToken({ userId: user.id }), anAccessToken({ userId: null }), anAccessToken()];
      for (const t of [userToken, clientToken, orphanToken]) await ctx.store.accessTokens.insert(t);
      assert.deepEqual(await ctx.store.accessTokens.findWithUserByHash(userToken.tokenHash), { token: userToken, user, applicationExists: false });
      assert.deepEqual(await ctx.store.accessTokens.findWithUserByHash(clientToken.tokenHash), { token: clientToken, user: undefined, applicationExists: false });
      assert.deepEqual(await ctx.store.accessTokens.findWithUserByHash(orphanToken.tokenHash), { token: orphanToken, user: undefined, applicationExists: false });
      assert.equal(await ctx.store.accessTokens.findWithUserByHash(hash()), undefined);
      // What another connection commits is seen by the next read.
      await ctx.store.users.update({ ...user, disabled: false, displayName: "Changed" });
      await ctx.store.accessTokens.revoke(userToken.tokenHash, T0 + 1);
      const again = await ctx.store.accessTokens.findWithUserByHash(userToken.tokenHash);
      assert.equal(again?.user?.displayName, "Changed");
      assert.equal(again?.token.revokedAt, T0 + 1);
    });

    it("finds a token with its user's standing and whether its application exists, in one read", async () => {
      const app = anApplication();
      const user = aUser();
      await ctx.store.applications.insert(app);
      await ctx.store.users.insert(user);
      const userToken = anAccessToken({ clientId: app.clientId, userId: user.id });
      const clientToken = anAccessToken({ clientId: app.clientId, userId: null });
      for (const t of [userToken, clientToken]) await ctx.store.accessTokens.insert(t);
      assert.deepEqual(await ctx.store.accessTokens.findStandingByHash(userToken.tokenHash), { token: userToken, user: { disabled: false, name: user.name }, applicationExists: true });
      assert.deepEqual(await ctx.store.accessTokens.findStandingByHash(clientToken.tokenHash), { token: clientToken, user: undefined, applicationExists: true });
      assert.equal((await ctx.store.accessTokens.findWithUserByHash(userToken.tokenHash))?.applicationExists, true);
      assert.equal(await ctx.store.accessTokens.findStandingByHash(hash()), undefined);
      await ctx.store.users.update({ ...user, disabled: true });
      assert.deepEqual((await ctx.store.accessTokens.findStandingByHash(userToken.tokenHash))?.user, { disabled: true, name: user.name });
      await ctx.store.users.deleteByName(user.name);
      await ctx.store.applications.deleteByName(app.name);
      for (const t of [userToken, clientToken]) {
        const found = await ctx.store.accessTokens.findStandingByHash(t.tokenHash);
        assert.equal(found?.user, undefined);
        assert.equal(found?.applicationExists, false);
      }
    });

    it("revokes one access token, keeping the first revocation time", async () => {
      const token = anAccessToken();
      await ctx.store.accessTokens.insert(token);
      await ctx.store.accessTokens.revoke(token.tokenHash, T0 + 1);
      await ctx.store.accessTokens.revoke(token.tokenHash, T0 + 2);
      assert.equal((await ctx.store.accessTokens.findByHash(token.tokenHash))?.revokedAt, T0 + 1);
    });

    it("answers lookups made together, each with its own row, however many share a query", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      // More than one query's worth (32), some of them a user's.
      const tokens = Array.from({ length: 40 }, (_, i) => anAccessToken({ userId: i % 3 === 0 ? user.id : null }));
      for (const t of tokens) await ctx.store.accessTokens.insert(t);
      const unknown = [hash(), hash()];
      const asked = [...tokens.map((t) => t.tokenHash), ...unknown, tokens[0]!.tokenHash, tokens[39]!.tokenHash];
      const [plain, joined] = await Promise.all([
        Promise.all(asked.map((h) => ctx.store.accessTokens.findByHash(h))),
        Promise.all(asked.map((h) => ctx.store.accessTokens.findWithUserByHash(h))),
      ]);
      const expected = [...tokens, undefined, undefined, tokens[0], tokens[39]];
      assert.deepEqual(plain, expected);
      assert.deepEqual(
        joined,
        expected.map((t) => t && { token: t, user: t.userId ? user : undefined, applicationExists: false }),
      );
    });

    it("answers a lookup that shares its query with a value the database refuses", async () => {
      const token = anAccessToken();
      await ctx.store.accessTokens.insert(token);
      // PostgreSQL refuses a NUL character in text; SQLite finds nothing.
      const [found, refused] = await Promise.allSettled([
        ctx.store.accessTokens.findByHash(token.tokenHash),
        ctx.store.accessTokens.findByHash("nul\u0000hash"),
      ]);
      assert.deepEqual(found, { status: "fulfilled", value: token });
      assert.ok(refused.status === "rejected" || refused.value === undefined);
    });

    it("joins a caller's transaction: a rolled-back insert leaves no row", async () => {
      const token = anAccessToken();
      await assert.rejects(
        ctx.db.transaction(async (trx) => {
          await ctx.store.accessTokens.insert(token, trx);
          throw new Error("roll back");
        }),
        /roll back/,
      );
      assert.equal(await ctx.store.accessTokens.findByHash(token.tokenHash), undefined);
    });
  });

  describe("refresh tokens", () => {
    it("round-trips by hash", async () => {
      const token = aRefreshToken({ consumedAt: T0 + 1, revokedAt: T0 + 2 });
      await ctx.store.refreshTokens.insert(token);
      assert.deepEqual(await ctx.store.refreshTokens.findByHash(token.tokenHash), token);
    });

    it("consumes a live token once, and never a consumed, revoked or expired one", async () => {
      const live = aRefreshToken();
      const revoked = aRefreshToken({ revokedAt: T0 });
      const expired = aRefreshToken({ expiresAt: T0 + 10 });
      for (const t of [live, revoked, expired]) await ctx.store.refreshTokens.insert(t);
      assert.equal(await ctx.store.refreshTokens.consume(live.tokenHash, T0 + 10), true);
      assert.equal((await ctx.store.refreshTokens.findByHash(live.tokenHash))?.consumedAt, T0 + 10);
      assert.equal(await ctx.store.refreshTokens.consume(live.tokenHash, T0 + 11), false);
      assert.equal(await ctx.store.refreshTokens.consume(revoked.tokenHash, T0 + 10), false);
      assert.equal(await ctx.store.refreshTokens.consume(expired.tokenHash, T0 + 10), false);
      assert.equal(await ctx.store.refreshTokens.consume(hash(), T0), false);
    });

    it("lets exactly one of 50 concurrent consumes of one token win", async () => {
      const token = aRefreshToken();
      await ctx.store.refreshTokens.insert(token);
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => ctx.store.refreshTokens.consume(token.tokenHash, T0 + i)));
      assert.equal(results.filter(Boolean).length, 1);
      const winner = results.indexOf(true);
      assert.equal((await ctx.store.refreshTokens.findByHash(token.tokenHash))?.consumedAt, T0 + winner);
    });
  });

  describe("rotation", () => {
    const successorOf = (old: RefreshTokenRecord) => ({
      access: anAccessToken({ familyId: old.familyId }),
      refresh: aRefreshToken({ familyId: old.familyId }),
    });

    it("records the rows of exactly one of 20 concurrent rotations of one token", async () => {
      const token = aRefreshToken();
      await ctx.store.refreshTokens.insert(token);
      const successors = Array.from({ length: 20 }, () => successorOf(token));
      const results = await Promise.all(successors.map((rows, i) => ctx.store.refreshTokens.rotate(token.tokenHash, T0 + i, rows)));
      assert.equal(results.filter(Boolean).length, 1);
      const winner = results.indexOf(true);
      assert.equal((await ctx.store.refreshTokens.findByHash(token.tokenHash))?.consumedAt, T0 + winner);
      for (const [i, rows] of successors.entries()) {
        assert.equal((await ctx.store.accessTokens.findByHash(rows.access.tokenHash)) !== undefined, i === winner, `access row ${i}`);
        assert.equal((await ctx.store.refreshTokens.findByHash(rows.refresh.tokenHash)) !== undefined, i === winner, `refresh row ${i}`);
      }
    });

    it("records nothing for a consumed, revoked or expired token", async () => {
      const tokens = [aRefreshToken({ consumedAt: T0 }), aRefreshToken({ revokedAt: T0 }), aRefreshToken({ expiresAt: T0 + 10 })];
      for (const token of tokens) {
        await ctx.store.refreshTokens.insert(token);
        const rows = successorOf(token);
        assert.equal(await ctx.store.refreshTokens.rotate(token.tokenHash, T0 + 10, rows), false);
        assert.equal(await ctx.store.accessTokens.findByHash(rows.access.tokenHash), undefined);
        assert.equal(await ctx.store.refreshTokens.findByHash(rows.refresh.tokenHash), undefined);
      }
    });
  });

  describe("family revocation", () => {
    it("revokes every access and refresh token of one family, and nothing else", async () => {
      const familyId = randomUUID();
      const access = [anAccessToken({ familyId }), anAccessToken({ familyId })];
      const refresh = [aRefreshToken({ familyId, consumedAt: T0 }), aRefreshToken({ familyId })];
      const bystanderAccess = anAccessToken();
      const familyless = anAccessToken({ familyId: null });
      const bystanderRefresh = aRefreshToken();
      for (const t of [...access, bystanderAccess, familyless]) await ctx.store.accessTokens.insert(t);
      for (const t of [...refresh, bystanderRefresh]) await ctx.store.refreshTokens.insert(t);

      await ctx.store.refreshTokens.revokeFamily(familyId, T0 + 100);
      for (const t of access) assert.equal((await ctx.store.accessTokens.findByHash(t.tokenHash))?.revokedAt, T0 + 100);
      for (const t of refresh) assert.equal((await ctx.store.refreshTokens.findByHash(t.tokenHash))?.revokedAt, T0 + 100);
      assert.equal((await ctx.store.accessTokens.findByHash(bystanderAccess.tokenHash))?.revokedAt, null);
      assert.equal((await ctx.store.accessTokens.findByHash(familyless.tokenHash))?.revokedAt, null);
      assert.equal((await ctx.store.refreshTokens.findByHash(bystanderRefresh.tokenHash))?.revokedAt, null);
      assert.equal(await ctx.store.refreshTokens.consume(refresh[1]!.tokenHash, T0 + 101), false);

      // Revoking again keeps the first revocation time.
      await ctx.store.refreshTokens.revokeFamily(familyId, T0 + 200);
      assert.equal((await ctx.store.refreshTokens.findByHash(refresh[1]!.tokenHash))?.revokedAt, T0 + 100);
    });
  });

  describe("sessions", () => {
    it("round-trips by hash and deletes", async () => {
      const session = aSession();
      await ctx.store.sessions.insert(session);
      assert.deepEqual(await ctx.store.sessions.findByHash(session.idHash), session);
      await ctx.store.sessions.deleteByHash(session.idHash);
      assert.equal(await ctx.store.sessions.findByHash(session.idHash), undefined);
    });
  });

  describe("a user's sign-ins, for administration", () => {
    it("lists live sessions and the live refresh token of each grant, newest first, with the application's name", async () => {
      const user = aUser();
      const app = anApplication();
      await ctx.store.users.insert(user);
      await ctx.store.applications.insert(app);
      const older = aSession({ userId: user.id, createdAt: T0 + 1 });
      const newer = aSession({ userId: user.id, createdAt: T0 + 2 });
      const expired = aSession({ userId: user.id, expiresAt: T0 + 5 });
      for (const s of [older, newer, expired, aSession()]) await ctx.store.sessions.insert(s);
      const familyId = randomUUID();
      const consumed = aRefreshToken({ userId: user.id, familyId, clientId: app.clientId, consumedAt: T0 + 1 });
      const current = aRefreshToken({ userId: user.id, familyId, clientId: app.clientId, issuedAt: T0 + 2 });
      const orphan = aRefreshToken({ userId: user.id, clientId: "gone-client", issuedAt: T0 + 1 });
      const revoked = aRefreshToken({ userId: user.id, revokedAt: T0 });
      for (const t of [consumed, current, orphan, revoked, aRefreshToken()]) await ctx.store.refreshTokens.insert(t);

      const now = T0 + 10;
      assert.deepEqual((await ctx.store.userSignIns.sessions(user.id, now)).map((s) => s.idHash), [newer.idHash, older.idHash]);
      assert.deepEqual(await ctx.store.userSignIns.refreshGrants(user.id, now), [
        { familyId, clientId: app.clientId, applicationName: app.name, scope: current.scope, authTime: current.authTime, issuedAt: T0 + 2, expiresAt: current.expiresAt },
        { familyId: orphan.familyId, clientId: "gone-client", scope: orphan.scope, authTime: orphan.authTime, issuedAt: T0 + 1, expiresAt: orphan.expiresAt },
      ]);
    });

    it("ends one session or grant of that user only, and everything at once", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const [mine, other] = [aSession({ userId: user.id }), aSession({ userId: user.id })];
      const someoneElses = aSession();
      for (const s of [mine, other, someoneElses]) await ctx.store.sessions.insert(s);
      assert.equal(await ctx.store.userSignIns.endSession(user.id, someoneElses.idHash), false, "not this user's");
      assert.equal(await ctx.store.userSignIns.endSession(user.id, mine.idHash), true);
      assert.equal(await ctx.store.sessions.findByHash(mine.idHash), undefined);

      const grant = aRefreshToken({ userId: user.id });
      const access = anAccessToken({ userId: user.id, familyId: grant.familyId });
      const kept = aRefreshToken({ userId: user.id });
      const stranger = aRefreshToken();
      for (const t of [grant, kept, stranger]) await ctx.store.refreshTokens.insert(t);
      await ctx.store.accessTokens.insert(access);
      assert.equal(await ctx.store.userSignIns.revokeGrant(user.id, stranger.familyId, T0 + 1), false, "not this user's");
      assert.equal((await ctx.store.refreshTokens.findByHash(stranger.tokenHash))?.revokedAt, null);
      assert.equal(await ctx.store.userSignIns.revokeGrant(user.id, grant.familyId, T0 + 1), true);
      assert.equal((await ctx.store.refreshTokens.findByHash(grant.tokenHash))?.revokedAt, T0 + 1);
      assert.equal((await ctx.store.accessTokens.findByHash(access.tokenHash))?.revokedAt, T0 + 1, "with its access tokens");

      const loose = anAccessToken({ userId: user.id, familyId: null });
      await ctx.store.accessTokens.insert(loose);
      assert.deepEqual(await ctx.store.userSignIns.endAll(user.id, T0 + 2), { sessions: 1, grants: 1 });
      assert.equal(await ctx.store.sessions.findByHash(other.idHash), undefined);
      assert.equal((await ctx.store.refreshTokens.findByHash(kept.tokenHash))?.revokedAt, T0 + 2);
      assert.equal((await ctx.store.accessTokens.findByHash(loose.tokenHash))?.revokedAt, T0 + 2);
      assert.ok(await ctx.store.sessions.findByHash(someoneElses.idHash), "other users keep theirs");
    });
  });

  describe("users: search and pages", () => {
    it("matches name, display name or email ignoring case, with LIKE's wildcards as text, and pages by name", async () => {
      const tag = `pg${id()}`.toLowerCase();
      const users = [
        aUser({ name: `${tag}-a`, displayName: "Plain", email: `a@${tag}.example` }),
        aUser({ name: `${tag}-b`, displayName: `Has 100%_${tag.toUpperCase()}`, email: "b@example.com" }),
        aUser({ name: `${tag}-c`, displayName: "Plain", email: "c@example.com" }),
      ];
      for (const u of users) await ctx.store.users.insert(u);
      const names = (page: { users: UserRecord[] }) => page.users.map((u) => u.name);
      const all = await ctx.store.users.page({ search: tag.toUpperCase(), limit: 0 });
      assert.deepEqual([names(all), all.total], [users.map((u) => u.name), 3]);
      assert.deepEqual(names(await ctx.store.users.page({ search: `%_${tag}`, limit: 0 })), [`${tag}-b`]);
      assert.deepEqual(names(await ctx.store.users.page({ search: `${tag}.example`, limit: 0 })), [`${tag}-a`]);
      const second = await ctx.store.users.page({ search: tag, limit: 1, afterName: `${tag}-a` });
      assert.deepEqual([names(second), second.total], [[`${tag}-b`], 3]);
    });

    it("finds a display name outside ASCII by its own text, whatever case the backend can fold", async () => {
      const tag = `pu${id()}`.toLowerCase();
      const user = aUser({ name: `${tag}-e`, displayName: `Élodie Ørsted ${tag}` });
      await ctx.store.users.insert(user);
      const names = (page: { users: UserRecord[] }) => page.users.map((u) => u.name);
      // SQLite's lower() folds ASCII only: the text as written must still match there (its ASCII in any case).
      assert.deepEqual(names(await ctx.store.users.page({ search: `Élodie Ørsted ${tag.toUpperCase()}`, limit: 0 })), [user.name]);
    });
  });

  describe("login failures", () => {
    const WINDOW = 300_000;
    const MAX = 5;

    it("lets exactly max of 50 concurrent reservations of one key through, locks it with the one that spends the budget, and counts none of the rest", async () => {
      const key = `user:${hash()}`;
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.loginFailures.reserveFailure(key, MAX, T0, WINDOW)));
      assert.deepEqual(results.filter((r) => r !== undefined).sort(), [1, 2, 3, 4, 5]);
      assert.equal(results.filter((r) => r === undefined).length, 50 - MAX);
      assert.deepEqual(await ctx.store.loginFailures.find(key), { key, failures: MAX, windowStartedAt: T0, lockedUntil: T0 + WINDOW });
    });

    it("refuses while locked, and starts a new window once the lock is over", async () => {
      const key = `ip:${hash()}`;
      for (let i = 1; i <= MAX; i++) assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + i, WINDOW), i);
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + MAX + WINDOW - 1, WINDOW), undefined);
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + MAX + WINDOW, WINDOW), 1);
      assert.deepEqual(await ctx.store.loginFailures.find(key), { key, failures: 1, windowStartedAt: T0 + MAX + WINDOW, lockedUntil: 0 });
    });

    it("counts failures within one window from its first failure, and afresh after it", async () => {
      const key = `user:${hash()}`;
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0, WINDOW), 1);
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + WINDOW - 1, WINDOW), 2);
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + WINDOW, WINDOW), 1);
    });

    it("gives a failure back, lifting the lock it began, and clears a key", async () => {
      const key = `user:${hash()}`;
      for (let i = 0; i < MAX; i++) await ctx.store.loginFailures.reserveFailure(key, MAX, T0, WINDOW);
      await ctx.store.loginFailures.refundFailure(key, MAX);
      assert.deepEqual(await ctx.store.loginFailures.find(key), { key, failures: MAX - 1, windowStartedAt: T0, lockedUntil: 0 });
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + 1, WINDOW), MAX);
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, MAX, T0 + 2, WINDOW), undefined);
      await ctx.store.loginFailures.clear(key);
      assert.equal(await ctx.store.loginFailures.find(key), undefined);
      assert.equal(await ctx.store.loginFailures.reserveFailure(key, 1, T0 + 3, WINDOW), 1);
      assert.equal((await ctx.store.loginFailures.find(key))?.lockedUntil, T0 + 3 + WINDOW);
    });
  });

  describe("action limits", () => {
    const WINDOW = 3_600_000;

    it("lets exactly max of 40 concurrent actions through, and starts afresh after the window", async () => {
      const key = `signup:${hash()}`;
      const taken = await Promise.all(Array.from({ length: 40 }, () => ctx.store.actionLimits.take(key, 10, T0, WINDOW)));
      assert.equal(taken.filter(Boolean).length, 10);
      assert.equal(await ctx.store.actionLimits.take(key, 10, T0 + WINDOW - 1, WINDOW), false);
      assert.equal(await ctx.store.actionLimits.take(key, 10, T0 + WINDOW, WINDOW), true);
      assert.equal(await ctx.store.actionLimits.take(`other:${hash()}`, 10, T0, WINDOW), true, "keys are counted apart");
      assert.equal(await ctx.store.actionLimits.take(`none:${hash()}`, 0, T0, WINDOW), false, "a budget of 0 lets nothing through");
    });
  });

  describe("email links", () => {
    const aLink = (userId: string, over: Partial<EmailLinkRecord> = {}) => ({
      tokenHash: hash(), userId, purpose: "reset" as const, email: "u@example.com", continueRequest: null, createdAt: T0, expiresAt: T0 + HOUR, ...over,
    });

    it("finds users by email, ignoring case", async () => {
      const email = `Mixed.${id()}@Example.com`;
      const user = aUser({ email, emailVerified: false });
      await ctx.store.users.insert(user);
      assert.deepEqual((await ctx.store.users.findByEmail(email.toLowerCase())).map((u) => u.name), [user.name]);
      assert.deepEqual(await ctx.store.users.findByEmail(`nobody-${id()}@example.com`), []);
    });

    it("a newer link voids the older one, and a link of the other purpose is another link", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const older = aLink(user.id);
      const newer = aLink(user.id, { createdAt: T0 + 1 });
      const verify = aLink(user.id, { purpose: "verify" });
      await ctx.store.emailLinks.issue(older);
      await ctx.store.emailLinks.issue(verify);
      await ctx.store.emailLinks.issue(newer);
      assert.deepEqual(await ctx.store.emailLinks.take(older.tokenHash, "reset", T0 + 2), { ok: false, reason: "unknown" });
      assert.deepEqual(await ctx.store.emailLinks.take(verify.tokenHash, "reset", T0 + 2), { ok: false, reason: "unknown" }, "a purpose is part of the link");
      assert.equal((await ctx.store.emailLinks.take(newer.tokenHash, "reset", T0 + 2)).ok, true);
      assert.equal((await ctx.store.emailLinks.take(verify.tokenHash, "verify", T0 + 2)).ok, true);
    });

    it("lets exactly one of 20 concurrent takers have a link, then says used; an expired one says expired", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const link = aLink(user.id);
      await ctx.store.emailLinks.issue(link);
      const results = await Promise.all(Array.from({ length: 20 }, () => ctx.store.emailLinks.take(link.tokenHash, "reset", T0 + 5)));
      assert.equal(results.filter((r) => r.ok).length, 1);
      assert.ok(results.every((r) => r.ok || r.reason === "used"));
      const expiring = aLink(user.id, { purpose: "verify", expiresAt: T0 + 10 });
      await ctx.store.emailLinks.issue(expiring);
      assert.deepEqual(await ctx.store.emailLinks.take(expiring.tokenHash, "verify", T0 + 10), { ok: false, reason: "expired" });
    });

    it("verifies only the address it was mailed to", async () => {
      const user = aUser({ email: "first@example.com", emailVerified: false });
      await ctx.store.users.insert(user);
      const link = aLink(user.id, { purpose: "verify", email: "first@example.com" });
      await ctx.store.emailLinks.issue(link);
      await ctx.store.users.update({ ...user, email: "second@example.com" });
      const taken = await ctx.store.emailLinks.verifyEmail(link.tokenHash, T0 + 1);
      assert.equal(taken.ok, true);
      assert.equal(taken.verified, false);
      assert.equal((await ctx.store.users.findByName(user.name))!.emailVerified, false);
      const second = aLink(user.id, { purpose: "verify", email: "second@example.com" });
      await ctx.store.emailLinks.issue(second);
      assert.equal((await ctx.store.emailLinks.verifyEmail(second.tokenHash, T0 + 2)).verified, true);
      assert.equal((await ctx.store.users.findByName(user.name))!.emailVerified, true);
    });

    it("resets the password and ends every sign-in, once", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const session = aSession({ userId: user.id, expiresAt: T0 + HOUR });
      await ctx.store.sessions.insert(session);
      const refresh = aRefreshToken({ userId: user.id });
      await ctx.store.refreshTokens.insert(refresh);
      const link = aLink(user.id);
      await ctx.store.emailLinks.issue(link);
      assert.equal((await ctx.store.emailLinks.resetPassword(link.tokenHash, "scrypt$new", T0 + 1)).ok, true);
      assert.equal((await ctx.store.users.findByName(user.name))!.passwordHash, "scrypt$new");
      assert.equal(await ctx.store.sessions.findByHash(session.idHash), undefined);
      assert.equal((await ctx.store.refreshTokens.findByHash(refresh.tokenHash))?.revokedAt, T0 + 1);
      assert.deepEqual(await ctx.store.emailLinks.resetPassword(link.tokenHash, "scrypt$again", T0 + 2), { ok: false, reason: "used" });
      assert.equal((await ctx.store.users.findByName(user.name))!.passwordHash, "scrypt$new");
    });
  });

  describe("client assertion jtis", () => {
    it("lets exactly one of 50 concurrent uses of one jti through", async () => {
      const key = hash();
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.clientAssertionJtis.useOnce(key, T0 + 60_000, T0)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 60_000, T0 + 59_999), false);
    });

    it("takes a key again once its row has expired", async () => {
      const key = hash();
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 1000, T0), true);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 5000, T0 + 1000), true);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 9000, T0 + 4999), false);
    });
  });

  describe("device codes", () => {
    const aDeviceCode = (over: Partial<DeviceCodeRecord> = {}): DeviceCodeRecord => ({
      deviceCodeHash: hash(), userCode: id().slice(0, 8).toUpperCase(), clientId: "client", scope: "openid", status: "pending",
      userId: null, authTime: null, intervalSeconds: 5, lastPolledAt: 0, createdAt: T0, expiresAt: T0 + 600_000, ...over,
    });

    it("refuses a second code with the same user code, and finds one by user code until it expires", async () => {
      const code = aDeviceCode();
      await ctx.store.deviceCodes.insert(code);
      await assertConflict(ctx.store.deviceCodes.insert(aDeviceCode({ userCode: code.userCode })), "device code");
      assert.deepEqual(await ctx.store.deviceCodes.findByUserCode(code.userCode, T0), code);
      assert.equal(await ctx.store.deviceCodes.findByUserCode(code.userCode, code.expiresAt), undefined);
    });

    it("decides a pending code once, and answers polls: too fast grows the interval, and an approved code is claimed once", async () => {
      const code = aDeviceCode();
      await ctx.store.deviceCodes.insert(code);
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0)).kind, "polled");
      const fast = await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 4999);
      assert.equal(fast.kind, "too_fast");
      assert.equal(fast.kind === "too_fast" && fast.record.intervalSeconds, 10);
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 9999)).kind, "too_fast");
      assert.equal(await ctx.store.deviceCodes.decide(code.userCode, "approved", "user-1", 1234, T0), true);
      assert.equal(await ctx.store.deviceCodes.decide(code.userCode, "denied", "user-1", 1234, T0), false);
      const claimed = await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 60_000);
      assert.equal(claimed.kind, "claimed");
      assert.equal(claimed.kind === "claimed" && claimed.record.userId, "user-1");
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 120_000)).kind, "polled");
      assert.equal((await ctx.store.deviceCodes.poll(hash(), "client", T0)).kind, "unknown");
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, "another-client", T0 + 180_000)).kind, "unknown");
    });

    it("gives an approved code to exactly one of 20 concurrent polls", async () => {
      const code = aDeviceCode({ intervalSeconds: 0 });
      await ctx.store.deviceCodes.insert(code);
      await ctx.store.deviceCodes.decide(code.userCode, "approved", "user-1", 1234, T0);
      const polls = await Promise.all(Array.from({ length: 20 }, () => ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 1000)));
      assert.equal(polls.filter((p) => p.kind === "claimed").length, 1);
    });
  });

  describe("cleanup of expired rows", () => {
    // Far past every other test's rows, so once those are drained the counts below are exact.
    let clock: FakeClock;
    const limits = { batchSize: 3, maxBatches: 2 };
    const job = () => new CleanupJob(ctx.db, clock, silentLogger, { ...limits, intervalMs: 60_000 });

    beforeEach(async () => {
      clock = new FakeClock(T0 + 1000 * 24 * HOUR);
      while (Object.values(await deleteExpired(ctx.db, clock.now(), { batchSize: 1000, maxBatches: 10 })).some((n) => n > 0));
    });

    it("keeps an expired authorization code for a day, so a replay is still recognised, then deletes it", async () => {
      const now = clock.now();
      const code = {
        codeHash: `code-${now}`, familyId: "code-family", clientId: "client", userId: "user", redirectUri: "http://127.0.0.1/cb",
        scope: "openid", nonce: null, codeChallenge: null, codeChallengeMethod: null, authTime: Math.floor(now / 1000), claims: null,
        createdAt: now, expiresAt: now + 1000, consumedAt: now, replayedAt: null,
      };
      await ctx.store.authorizationCodes.insert(code);
      clock.advanceSeconds(23 * 3600);
      assert.equal((await job().runOnce()).authorization_codes, 0);
      clock.advanceSeconds(3601);
      assert.equal((await job().runOnce()).authorization_codes, 1);
    });

    it("deletes expired access tokens, sessions and federation states, and keeps live ones", async () => {
      const now = clock.now();
      const expiredAccess = anAccessToken({ expiresAt: now + 1000 });
      const expiredFamilyless = anAccessToken({ expiresAt: now + 1000, familyId: null });
      const liveAccess = anAccessToken({ expiresAt: now + HOUR });
      const expiredSession = aSession({ expiresAt: now + 1000 });
      const liveSession = aSession({ expiresAt: now + HOUR });
      const expiredState = aFederationState({ expiresAt: now + 1000 });
      const liveState = aFederationState({ expiresAt: now + HOUR });
      for (const t of [expiredAccess, expiredFamilyless, liveAccess]) await ctx.store.accessTokens.insert(t);
      for (const s of [expiredSession, liveSession]) await ctx.store.sessions.insert(s);
      for (const s of [expiredState, liveState]) await ctx.store.federationStates.insert(s);

      assert.deepEqual(await job().runOnce(), NOTHING_SWEPT);
      clock.advanceSeconds(1);
      assert.deepEqual(await job().runOnce(), { ...NOTHING_SWEPT, access_tokens: 2, sessions: 1, federation_states: 1 });
      assert.equal(await ctx.store.accessTokens.findByHash(expiredAccess.tokenHash), undefined);
      assert.equal(await ctx.store.accessTokens.findByHash(expiredFamilyless.tokenHash), undefined);
      assert.equal(await ctx.store.sessions.findByHash(expiredSession.idHash), undefined);
      assert.equal(await ctx.store.federationStates.findByHash(expiredState.stateHash), undefined);
      assert.ok(await ctx.store.accessTokens.findByHash(liveAccess.tokenHash));
      assert.ok(await ctx.store.sessions.findByHash(liveSession.idHash));
      assert.ok(await ctx.store.federationStates.findByHash(liveState.stateHash));
    });

    it("deletes a client assertion's jti once the assertion has expired, and keeps a live one", async () => {
      const now = clock.now();
      await ctx.store.clientAssertionJtis.useOnce(`expiring-${now}`, now + 1000, now);
      await ctx.store.clientAssertionJtis.useOnce(`live-${now}`, now + HOUR, now);
      assert.equal((await job().runOnce()).client_assertion_jtis, 0);
      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).client_assertion_jtis, 1);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(`live-${now}`, now + HOUR, clock.now()), false);
    });

    it("keeps an expired refresh token while its family still has a live one", async () => {
      const now = clock.now();
      const familyId = randomUUID();
      const consumed = aRefreshToken({ familyId, consumedAt: now, expiresAt: now + 1000 });
      const current = aRefreshToken({ familyId, expiresAt: now + 5000 });
      const lone = aRefreshToken({ expiresAt: now + 1000 });
      for (const t of [consumed, current, lone]) await ctx.store.refreshTokens.insert(t);

      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).refresh_tokens, 1);
      assert.equal(await ctx.store.refreshTokens.findByHash(lone.tokenHash), undefined);
      assert.ok(await ctx.store.refreshTokens.findByHash(consumed.tokenHash), "reuse of the consumed token must still be detectable");

      clock.advanceSeconds(4);
      assert.equal((await job().runOnce()).refresh_tokens, 2);
      assert.equal(await ctx.store.refreshTokens.findByHash(consumed.tokenHash), undefined);
      assert.equal(await ctx.store.refreshTokens.findByHash(current.tokenHash), undefined);
    });

    it("keeps a family's expired refresh tokens while one of its access tokens is live", async () => {
      const now = clock.now();
      const familyId = randomUUID();
      const consumed = aRefreshToken({ familyId, consumedAt: now, expiresAt: now + 1000 });
      const current = aRefreshToken({ familyId, expiresAt: now + 1000 });
      const access = anAccessToken({ familyId, expiresAt: now + 5000 });
      for (const t of [consumed, current]) await ctx.store.refreshTokens.insert(t);
      await ctx.store.accessTokens.insert(access);

      clock.advanceSeconds(1);
      assert.deepEqual(await job().runOnce(), NOTHING_SWEPT);
      assert.ok(await ctx.store.refreshTokens.findByHash(consumed.tokenHash), "reuse must still revoke the live access token");

      clock.advanceSeconds(4);
      assert.deepEqual(await job().runOnce(), { ...NOTHING_SWEPT, access_tokens: 1, refresh_tokens: 2 });
    });

    it("keeps an expired email link and an hourly budget for a day, then deletes them", async () => {
      const now = clock.now();
      const user = aUser();
      await ctx.store.users.insert(user);
      await ctx.store.emailLinks.issue({ tokenHash: hash(), userId: user.id, purpose: "verify", email: "", continueRequest: null, createdAt: now, expiresAt: now });
      assert.equal(await ctx.store.actionLimits.take(`reset:${hash()}`, 5, now, HOUR), true);
      clock.advanceSeconds(23 * 3600);
      const mine = ({ email_links, action_limits }: Record<string, number>) => ({ email_links, action_limits });
      assert.deepEqual(mine(await job().runOnce()), { email_links: 0, action_limits: 0 });
      clock.advanceSeconds(3600);
      assert.deepEqual(mine(await job().runOnce()), { email_links: 1, action_limits: 1 });
    });

    it("deletes at most batchSize × maxBatches rows per table per run", async () => {
      const now = clock.now();
      for (let i = 0; i < 8; i++) await ctx.store.sessions.insert(aSession({ expiresAt: now }));
      assert.equal((await job().runOnce()).sessions, 6);
      assert.equal((await job().runOnce()).sessions, 2);
      assert.equal((await job().runOnce()).sessions, 0);
    });

    it("splits the work between runs at the same moment, each row deleted once", async () => {
      const now = clock.now();
      for (let i = 0; i < 40; i++) await ctx.store.accessTokens.insert(anAccessToken({ expiresAt: now }));
      const runs = await Promise.all(Array.from({ length: 4 }, () => deleteExpired(ctx.db, now, { batchSize: 5, maxBatches: 10 })));
      assert.equal(runs.reduce((sum, r) => sum + r.access_tokens!, 0), 40);
      const [left] = await ctx.db("access_tokens").where("expires_at", "<=", now).count({ n: "*" });
      assert.equal(Number(left!.n), 0);
    });
  });
});
