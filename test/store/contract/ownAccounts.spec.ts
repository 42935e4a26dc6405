import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { anAccessToken, T0 } from "../../support/storeFixtures.js";
import { describeEachBackend } from "../../support/databases.js";
import { whenBlocking } from "../../support/transactions.js";
import { aProvider, aRefreshToken, aSession, aUser, anApplication, id } from "./fixtures.js";

describeEachBackend("storage contract: own accounts", (ctx) => {
  describe("own accounts (the account page)", () => {
    it("changes the password once, ending the other sessions and every refresh and access token", async () => {
      const user = aUser({ passwordHash: "old-hash" });
      const other = aUser();
      await ctx.store.users.insert(user);
      await ctx.store.users.insert(other);
      const [kept, ended] = [aSession({ userId: user.id }), aSession({ userId: user.id })];
      const theirs = aSession({ userId: other.id });
      for (const s of [kept, ended, theirs]) await ctx.store.sessions.insert(s);
      const [token, theirToken] = [aRefreshToken({ userId: user.id }), aRefreshToken({ userId: other.id })];
      for (const t of [token, theirToken]) await ctx.store.refreshTokens.insert(t);
      // An access token of a refresh token's family, one of none (implicit, token exchange), and another user's.
      const access = [anAccessToken({ userId: user.id, familyId: token.familyId }), anAccessToken({ userId: user.id, familyId: null, clientId: "other-client" })];
      const theirAccess = anAccessToken({ userId: other.id });
      for (const t of [...access, theirAccess]) await ctx.store.accessTokens.insert(t);
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
      // The kept session keeps no token: none is bound to a session, and every refresh token went too.
      for (const t of access) assert.equal((await ctx.store.accessTokens.findByHash(t.tokenHash))?.revokedAt, T0 + 1);
      assert.equal((await ctx.store.accessTokens.findByHash(theirAccess.tokenHash))?.revokedAt, null);
      assert.equal(await ctx.store.ownAccounts.changePassword(user.id, "old-hash", "late", undefined, T0 + 2), false);
    });

    it("attack: a refresh in flight as the password changes leaves no token of it live", async () => {
      const user = aUser({ passwordHash: "old-hash" });
      await ctx.store.users.insert(user);
      const old = aRefreshToken({ userId: user.id });
      await ctx.store.refreshTokens.insert(old);
      const issued = { access: anAccessToken({ userId: user.id, familyId: old.familyId }), refresh: aRefreshToken({ userId: user.id, familyId: old.familyId }) };
      // The rotation (RefreshTokenRepository.rotate) as far as its commit: the old token consumed, the new rows written.
      const rotation = await ctx.db.transaction();
      assert.equal(await ctx.store.refreshTokens.consume(old.tokenHash, T0 + 1, rotation), true);
      await ctx.store.accessTokens.insert(issued.access, rotation);
      await ctx.store.refreshTokens.insert(issued.refresh, rotation);
      const change = ctx.store.ownAccounts.changePassword(user.id, "old-hash", "new-hash", undefined, T0 + 2);
      // PostgreSQL: the change waits on the consumed row; SQLite: on the one writer.
      await whenBlocking(ctx.db, rotation);
      await rotation.commit();
      assert.equal(await change, true);
      assert.equal((await ctx.store.accessTokens.findByHash(issued.access.tokenHash))?.revokedAt, T0 + 2, "its access token");
      assert.equal((await ctx.store.refreshTokens.findByHash(issued.refresh.tokenHash))?.revokedAt, T0 + 2, "its refresh token");
    });

    it("attack: of 20 refreshes racing a password change, none leaves a live token", async () => {
      const user = aUser({ passwordHash: "old-hash" });
      await ctx.store.users.insert(user);
      const olds = Array.from({ length: 20 }, () => aRefreshToken({ userId: user.id }));
      for (const t of olds) await ctx.store.refreshTokens.insert(t);
      const rotations = olds.map((old) =>
        ctx.store.refreshTokens.rotate(old.tokenHash, T0 + 1, { access: anAccessToken({ userId: user.id, familyId: old.familyId }), refresh: aRefreshToken({ userId: user.id, familyId: old.familyId }) }),
      );
      const [changed] = await Promise.all([ctx.store.ownAccounts.changePassword(user.id, "old-hash", "new-hash", undefined, T0 + 2), ...rotations]);
      assert.equal(changed, true);
      for (const table of ["access_tokens", "refresh_tokens"]) {
        assert.deepEqual(await ctx.db(table).where({ user_id: user.id }).whereNull("revoked_at").select("token_hash"), [], table);
      }
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
