import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { T0 } from "../../support/storeFixtures.js";
import { describeEachBackend } from "../../support/databases.js";
import { aProvider, aRefreshToken, aSession, aUser, anApplication, id } from "./fixtures.js";

describeEachBackend("storage contract: own accounts", (ctx) => {
  describe("own accounts (the account page)", () => {
    it("changes the password once, ending the other sessions and every refresh token", async () => {
      const user = aUser({ passwordHash: "old-hash" });
      const other = aUser();
      await ctx.store.users.insert(user);
      await ctx.store.users.insert(other);
      const [kept, ended] = [aSession({ userId: user.id }), aSession({ userId: user.id })];
      const theirs = aSession({ userId: other.id });
      for (const s of [kept, ended, theirs]) await ctx.store.sessions.insert(s);
      const [token, theirToken] = [aRefreshToken({ userId: user.id }), aRefreshToken({ userId: other.id })];
      for (const t of [token, theirToken]) await ctx.store.refreshTokens.insert(t);
      // Concurrent changes from the same old password: exactly one wins.
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => ctx.store.ownAccounts.changePassword(user.id, "old-hash", `new-hash-${i}`, kept.idHash, T0 + 1)));
      assert.equal(results.filter(Boolean).length, 1);
      const winner = results.indexOf(true);
      assert.equal((await ctx.store.users.findById(user.id))?.passwordHash, `new-hash-${winner}`);
      assert.ok(await ctx.store.sessions.findByHash(kept.idHash), "the session it came from stays");
      assert.equal(await ctx.store.sessions.findByHash(ended.idHash), undefined);
      assert.ok(await ctx.store.sessions.findByHash(theirs.idHash), "another user's session is untouched");
      assert.equal((await ctx.store.refreshTokens.findByHash(token.tokenHash))?.revokedAt, T0 + 1);
      assert.equal((await ctx.store.refreshTokens.findByHash(theirToken.tokenHash))?.revokedAt, null);
      assert.equal(await ctx.store.ownAccounts.changePassword(user.id, "old-hash", "late", undefined, T0 + 2), false);
    });

    it("never unlinks the last way to sign in, even concurrently", async () => {
      const provider = aProvider();
      await ctx.store.providers.insert(provider);
      const link = (userId: string, externalId: string) =>
        ctx.store.federatedIdentities.insert({ provider: provider.name, externalIdType: "sub", externalId, userId, username: "", createdAt: T0, updatedAt: T0 });
      const key = (externalId: string) => ({ provider: provider.name, externalIdType: "sub" as const, externalId });
      // No password, two links: of two unlinks at once, one goes, and the other is refused as the last way in.
      const federated = aUser({ passwordHash: null });
      await ctx.store.users.insert(federated);
      await link(federated.id, "a");
      await link(federated.id, "b");
      const outcomes = await Promise.all([ctx.store.ownAccounts.unlink(federated.id, key("a")), ctx.store.ownAccounts.unlink(federated.id, key("b"))]);
      assert.deepEqual(outcomes.sort(), ["last_sign_in", "unlinked"]);
      assert.equal((await ctx.store.federatedIdentities.listByUser(federated.id)).length, 1);
      // With a password, the last link goes; another user's link is not found.
      const withPassword = aUser();
      await ctx.store.users.insert(withPassword);
      await link(withPassword.id, "c");
      assert.equal(await ctx.store.ownAccounts.unlink(federated.id, key("c")), "not_found");
      assert.equal(await ctx.store.ownAccounts.unlink(withPassword.id, key("c")), "unlinked");
      // With a passkey, too.
      const withPasskey = aUser({ passwordHash: null });
      await ctx.store.users.insert(withPasskey);
      await link(withPasskey.id, "d");
      await ctx.store.userFactors.insert({
        id: randomUUID(), userId: withPasskey.id, type: "passkey", name: "key", secret: null, credentialId: `cred-${id()}`, publicKey: "pk",
        counter: 0, transports: [], confirmed: true, createdAt: T0, lastUsedAt: null,
      });
      assert.equal(await ctx.store.ownAccounts.unlink(withPasskey.id, key("d")), "unlinked");
    });

    it("lists the required applications a user signed in to", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const required = anApplication({ name: `req-${id()}`, clientId: `req-${id()}`, mfa: "required" });
      const optional = anApplication({ name: `opt-${id()}`, clientId: `opt-${id()}`, mfa: "optional" });
      for (const a of [required, optional]) await ctx.store.applications.insert(a);
      assert.deepEqual(await ctx.store.ownAccounts.requiredMfaApplications(user.id), []);
      await ctx.store.ownAccounts.noteMfaSignIn(user.id, required.clientId, T0);
      await ctx.store.ownAccounts.noteMfaSignIn(user.id, required.clientId, T0 + 1);
      await ctx.store.ownAccounts.noteMfaSignIn(user.id, optional.clientId, T0);
      assert.deepEqual(await ctx.store.ownAccounts.requiredMfaApplications(user.id), [required.name]);
      // The policy as it is now: an application made optional since no longer counts.
      await ctx.store.applications.update({ ...required, mfa: "optional" }, required);
      assert.deepEqual(await ctx.store.ownAccounts.requiredMfaApplications(user.id), []);
    });
  });
});
