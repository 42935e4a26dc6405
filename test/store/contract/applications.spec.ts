import assert from "node:assert/strict";
import { setTimeout } from "node:timers/promises";
import { APPLICATION_CACHE_MS } from "../../../src/store/applications.js";
import { createStore } from "../../../src/store/index.js";
import { anAccessToken, HOUR, T0 } from "../../support/storeFixtures.js";
import { id, anApplication, aUser, aRefreshToken, aSession, assertConflict } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: applications", (ctx) => {
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

    it("ends a user's sign-ins and access tokens with an update that asks (a new password, a disable), and nobody else's", async () => {
      const { mine, bystander } = await signedIn();
      await ctx.store.users.update({ ...mine.user, displayName: "Renamed" });
      assert.deepEqual(await state(mine), { refresh: null, access: null, session: true }, "a plain update ends nothing");
      // A token of no family (implicit, token exchange) ends too: found by its user, not by a refresh token.
      const familyless = anAccessToken({ userId: mine.user.id, familyId: null });
      await ctx.store.accessTokens.insert(familyless);
      await ctx.store.users.update({ ...mine.user, passwordHash: "scrypt$new" }, { at: T0 + 7, reason: "password_changed" });
      assert.deepEqual(await state(mine), { refresh: T0 + 7, access: T0 + 7, session: false });
      assert.equal((await ctx.store.accessTokens.findByHash(familyless.tokenHash))?.revokedAt, T0 + 7);
      const later = anAccessToken({ userId: mine.user.id });
      await ctx.store.accessTokens.insert(later);
      await ctx.store.users.update({ ...mine.user, disabled: true }, { at: T0 + 8, reason: "user_disabled" });
      assert.deepEqual(await state(mine), { refresh: T0 + 7, access: T0 + 7, session: false }, "a revocation keeps its first time");
      assert.equal((await ctx.store.accessTokens.findByHash(later.tokenHash))?.revokedAt, T0 + 8);
      assert.deepEqual(await state(bystander), { refresh: null, access: null, session: true });
      assert.equal((await ctx.store.users.findById(mine.user.id))?.disabled, true);
    });

    it("deletes a user with its refresh tokens revoked and its sessions ended, and nobody else's (its access tokens end with its row)", async () => {
      const { mine, bystander } = await signedIn();
      assert.equal(await ctx.store.users.deleteByName(mine.user.name, T0 + 9), true);
      assert.equal(await ctx.store.users.deleteByName(mine.user.name, T0 + 9), false);
      assert.deepEqual(await state(mine), { refresh: T0 + 9, access: null, session: false });
      assert.equal(await ctx.store.accessTokens.findStandingByHash(mine.access.tokenHash).then((t) => t?.user), undefined, "no user stands behind it");
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

  describe("consents", () => {
    it("remembers one consent per user and application, replaced whole, and goes with its user or its application", async () => {
      const [user, other] = [aUser(), aUser()];
      const app = anApplication();
      for (const u of [user, other]) await ctx.store.users.insert(u);
      await ctx.store.applications.insert(app);
      const consent = { userId: user.id, clientId: app.clientId, scopes: ["openid"], resources: [], grantedAt: T0 };
      assert.equal(await ctx.store.consents.find(user.id, app.clientId), undefined);
      await ctx.store.consents.remember(consent);
      assert.deepEqual(await ctx.store.consents.find(user.id, app.clientId), consent);
      const wider = { ...consent, scopes: ["openid", "email"], resources: ["https://api.example/"], grantedAt: T0 + 1 };
      await ctx.store.consents.remember(wider);
      assert.deepEqual(await ctx.store.consents.find(user.id, app.clientId), wider);
      await ctx.store.consents.remember({ ...consent, userId: other.id });
      await ctx.store.users.deleteByName(user.name);
      assert.equal(await ctx.store.consents.find(user.id, app.clientId), undefined);
      assert.ok(await ctx.store.consents.find(other.id, app.clientId), "another user's stays");
      await ctx.store.applications.deleteByName(app.name);
      assert.equal(await ctx.store.consents.find(other.id, app.clientId), undefined);
    });

    it("lists a user's consents newest first, and nobody else's", async () => {
      const [user, other] = [aUser(), aUser()];
      const [older, newer] = [anApplication(), anApplication()];
      for (const u of [user, other]) await ctx.store.users.insert(u);
      for (const a of [older, newer]) await ctx.store.applications.insert(a);
      await ctx.store.consents.remember({ userId: user.id, clientId: older.clientId, scopes: ["openid"], resources: [], grantedAt: T0 });
      await ctx.store.consents.remember({ userId: user.id, clientId: newer.clientId, scopes: ["openid", "email"], resources: ["https://api.example/"], grantedAt: T0 + 5 });
      await ctx.store.consents.remember({ userId: other.id, clientId: older.clientId, scopes: ["openid"], resources: [], grantedAt: T0 + 9 });
      assert.deepEqual((await ctx.store.consents.listForUser(user.id)).map((c) => [c.clientId, c.scopes, c.resources, c.grantedAt]), [
        [newer.clientId, ["openid", "email"], ["https://api.example/"], T0 + 5],
        [older.clientId, ["openid"], [], T0],
      ]);
      assert.deepEqual(await ctx.store.consents.listForUser(aUser().id), []);
    });

    it("revokes a consent with that application's refresh and access tokens for that user, in one transaction, and nothing else", async () => {
      const [user, other] = [aUser(), aUser()];
      const [app, bystanderApp] = [anApplication(), anApplication()];
      for (const u of [user, other]) await ctx.store.users.insert(u);
      for (const a of [app, bystanderApp]) await ctx.store.applications.insert(a);
      const grant = (userId: string, clientId: string) => {
        const refresh = aRefreshToken({ userId, clientId });
        return { refresh, access: anAccessToken({ userId, clientId, familyId: refresh.familyId }) };
      };
      const mine = [grant(user.id, app.clientId), grant(user.id, app.clientId)];
      const untouched = [grant(other.id, app.clientId), grant(user.id, bystanderApp.clientId)];
      for (const g of [...mine, ...untouched]) {
        await ctx.store.refreshTokens.insert(g.refresh);
        await ctx.store.accessTokens.insert(g.access);
      }
      // Access tokens with no refresh token behind them (implicit, token exchange): that application's end, another's stays.
      const [alone, aloneElsewhere] = [anAccessToken({ userId: user.id, clientId: app.clientId, familyId: null }), anAccessToken({ userId: user.id, clientId: bystanderApp.clientId, familyId: null })];
      for (const t of [alone, aloneElsewhere]) await ctx.store.accessTokens.insert(t);
      for (const [u, a] of [[user, app], [other, app], [user, bystanderApp]] as const) {
        await ctx.store.consents.remember({ userId: u.id, clientId: a.clientId, scopes: ["openid"], resources: [], grantedAt: T0 });
      }
      assert.deepEqual(await ctx.store.consents.revoke(user.id, app.clientId, T0 + 7), { refreshTokens: 2 });
      assert.equal(await ctx.store.consents.find(user.id, app.clientId), undefined);
      for (const g of mine) {
        assert.equal((await ctx.store.refreshTokens.findByHash(g.refresh.tokenHash))?.revokedAt, T0 + 7);
        assert.equal((await ctx.store.accessTokens.findByHash(g.access.tokenHash))?.revokedAt, T0 + 7);
      }
      for (const g of untouched) {
        assert.equal((await ctx.store.refreshTokens.findByHash(g.refresh.tokenHash))?.revokedAt, null);
        assert.equal((await ctx.store.accessTokens.findByHash(g.access.tokenHash))?.revokedAt, null);
      }
      assert.equal((await ctx.store.accessTokens.findByHash(alone.tokenHash))?.revokedAt, T0 + 7);
      assert.equal((await ctx.store.accessTokens.findByHash(aloneElsewhere.tokenHash))?.revokedAt, null);
      assert.ok(await ctx.store.consents.find(other.id, app.clientId), "another user's consent stays");
      assert.ok(await ctx.store.consents.find(user.id, bystanderApp.clientId), "the user's consent to another application stays");
      assert.equal(await ctx.store.consents.revoke(user.id, app.clientId, T0 + 8), undefined, "nothing left to revoke");
    });

    it("lets exactly one of 20 parallel revocations of one consent report it", async () => {
      const user = aUser();
      const app = anApplication();
      await ctx.store.users.insert(user);
      await ctx.store.applications.insert(app);
      await ctx.store.refreshTokens.insert(aRefreshToken({ userId: user.id, clientId: app.clientId }));
      await ctx.store.consents.remember({ userId: user.id, clientId: app.clientId, scopes: ["openid"], resources: [], grantedAt: T0 });
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ctx.store.consents.revoke(user.id, app.clientId, T0 + i)));
      assert.deepEqual(results.filter(Boolean), [{ refreshTokens: 1 }]);
    });

    it("attack: of 20 refreshes racing a consent's revocation, none of that application leaves a live token", async () => {
      const user = aUser();
      const app = anApplication();
      await ctx.store.users.insert(user);
      await ctx.store.applications.insert(app);
      const olds = Array.from({ length: 20 }, () => aRefreshToken({ userId: user.id, clientId: app.clientId }));
      for (const t of olds) await ctx.store.refreshTokens.insert(t);
      await ctx.store.consents.remember({ userId: user.id, clientId: app.clientId, scopes: ["openid"], resources: [], grantedAt: T0 });
      const issued = (familyId: string) => ({ access: anAccessToken({ userId: user.id, clientId: app.clientId, familyId }), refresh: aRefreshToken({ userId: user.id, clientId: app.clientId, familyId }) });
      const rotations = olds.map((old) => ctx.store.refreshTokens.rotate(old.tokenHash, T0 + 1, issued(old.familyId)));
      const [revoked] = await Promise.all([ctx.store.consents.revoke(user.id, app.clientId, T0 + 2), ...rotations]);
      assert.ok(revoked);
      for (const table of ["access_tokens", "refresh_tokens"]) {
        assert.deepEqual(await ctx.db(table).where({ user_id: user.id }).whereNull("revoked_at").select("token_hash"), [], table);
      }
    });
  });
});
