import assert from "node:assert/strict";
import type { EmailLinkRecord } from "../../../src/store/emailLinks.js";
import { anAccessToken, hash, HOUR, T0 } from "../../support/storeFixtures.js";
import type { UserRecord } from "../../../src/shared/model.js";
import { id, aUser, aRefreshToken, aSession, assertConflict } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: users", (ctx) => {
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

    it("resets the password and ends every sign-in and access token, once", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const session = aSession({ userId: user.id, expiresAt: T0 + HOUR });
      await ctx.store.sessions.insert(session);
      const refresh = aRefreshToken({ userId: user.id });
      await ctx.store.refreshTokens.insert(refresh);
      const access = anAccessToken({ userId: user.id, familyId: null });
      await ctx.store.accessTokens.insert(access);
      const link = aLink(user.id);
      await ctx.store.emailLinks.issue(link);
      assert.equal((await ctx.store.emailLinks.resetPassword(link.tokenHash, "scrypt$new", T0 + 1)).ok, true);
      assert.equal((await ctx.store.users.findByName(user.name))!.passwordHash, "scrypt$new");
      assert.equal(await ctx.store.sessions.findByHash(session.idHash), undefined);
      assert.equal((await ctx.store.refreshTokens.findByHash(refresh.tokenHash))?.revokedAt, T0 + 1);
      assert.equal((await ctx.store.accessTokens.findByHash(access.tokenHash))?.revokedAt, T0 + 1);
      assert.deepEqual(await ctx.store.emailLinks.resetPassword(link.tokenHash, "scrypt$again", T0 + 2), { ok: false, reason: "used" });
      assert.equal((await ctx.store.users.findByName(user.name))!.passwordHash, "scrypt$new");
    });
  });
});
