import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { ConflictError } from "../../../src/store/errors.js";
import type { AccountLinkRequest } from "../../../src/store/accountLinks.js";
import { hash, T0 } from "../../support/storeFixtures.js";
import type { FederatedIdentityRecord, ProviderRecord, UserRecord } from "../../../src/shared/model.js";
import { id, aUser, aProvider, aFederationState, assertConflict } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: federation", (ctx) => {
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
});
