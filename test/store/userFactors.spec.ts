import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { describeEachBackend } from "../support/databases.js";
import { T0 } from "../support/storeFixtures.js";
import type { UserFactorRecord, UserRecord } from "../../src/shared/model.js";

const id = () => randomBytes(8).toString("hex");

const aUser = (): UserRecord => ({
  id: randomUUID(), name: `user-${id()}`, passwordHash: null, displayName: "", email: "", emailVerified: false,
  avatar: "", phone: "", address: "", isAdmin: false, disabled: false, properties: {}, createdAt: T0, updatedAt: T0,
});

const aFactor = (userId: string, over: Partial<UserFactorRecord> = {}): UserFactorRecord => ({
  id: randomUUID(), userId, type: "totp", name: "Phone", secret: "SEALED", credentialId: null, publicKey: null,
  counter: 0, transports: [], confirmed: true, createdAt: T0, lastUsedAt: null, ...over,
});

/** The factors' storage contract (src/store/userFactors.ts), on every backend. */
describeEachBackend("user factors contract", (ctx) => {
  async function user(): Promise<UserRecord> {
    const u = aUser();
    await ctx.store.users.insert(u);
    return u;
  }

  it("round-trips a factor, lists only confirmed ones unless asked, and goes with its user", async () => {
    const u = await user();
    const passkey = aFactor(u.id, { type: "passkey", secret: null, credentialId: `cred-${id()}`, publicKey: "pk", counter: 7, transports: ["usb", "nfc"] });
    const pending = aFactor(u.id, { confirmed: false, createdAt: T0 + 1 });
    await ctx.store.userFactors.insert(passkey);
    await ctx.store.userFactors.insert(pending);
    assert.deepEqual(await ctx.store.userFactors.list(u.id), [passkey]);
    assert.deepEqual(await ctx.store.userFactors.list(u.id, true), [passkey, pending]);
    assert.deepEqual(await ctx.store.userFactors.findByCredentialId(passkey.credentialId!), passkey);
    assert.equal(await ctx.store.userFactors.find("nope"), undefined);
    await ctx.store.users.deleteByName(u.name);
    assert.equal(await ctx.store.userFactors.find(passkey.id), undefined);
  });

  it("accepts each TOTP step once: exactly one of 50 concurrent callers, and never an earlier step", async () => {
    const u = await user();
    const f = aFactor(u.id);
    await ctx.store.userFactors.insert(f);
    const wins = await Promise.all(Array.from({ length: 50 }, () => ctx.store.userFactors.acceptStep(f.id, 1000, T0)));
    assert.equal(wins.filter(Boolean).length, 1);
    assert.equal(await ctx.store.userFactors.acceptStep(f.id, 999, T0), false);
    assert.equal(await ctx.store.userFactors.acceptStep(f.id, 1001, T0), true);
  });

  it("confirms an enrolment with its first step only, and a confirmed factor is not confirmed again", async () => {
    const u = await user();
    const f = aFactor(u.id, { confirmed: false });
    await ctx.store.userFactors.insert(f);
    assert.equal(await ctx.store.userFactors.acceptStep(f.id, 5, T0), false, "unconfirmed: no sign-in step");
    assert.equal(await ctx.store.userFactors.acceptStep(f.id, 5, T0, true), true);
    assert.equal(await ctx.store.userFactors.acceptStep(f.id, 6, T0, true), false);
    assert.equal((await ctx.store.userFactors.find(f.id))?.confirmed, true);
  });

  it("takes only a higher signature counter, or zero from a counterless authenticator", async () => {
    const u = await user();
    const counting = aFactor(u.id, { type: "passkey", credentialId: `c-${id()}`, counter: 10 });
    const counterless = aFactor(u.id, { type: "passkey", credentialId: `c-${id()}`, counter: 0 });
    await ctx.store.userFactors.insert(counting);
    await ctx.store.userFactors.insert(counterless);
    assert.equal(await ctx.store.userFactors.acceptCounter(counting.id, 10, T0), false);
    assert.equal(await ctx.store.userFactors.acceptCounter(counting.id, 9, T0), false);
    assert.equal(await ctx.store.userFactors.acceptCounter(counting.id, 0, T0), false);
    assert.equal(await ctx.store.userFactors.acceptCounter(counting.id, 11, T0), true);
    assert.equal(await ctx.store.userFactors.acceptCounter(counterless.id, 0, T0), true);
    assert.equal(await ctx.store.userFactors.acceptCounter(counterless.id, 0, T0), true);
  });

  it("uses a recovery code once, voids the old set with a new one, and drops codes with the last factor", async () => {
    const u = await user();
    const f = aFactor(u.id);
    await ctx.store.userFactors.insert(f);
    await ctx.store.userFactors.replaceRecoveryCodes(u.id, ["h1", "h2", "h3"]);
    const uses = await Promise.all(Array.from({ length: 20 }, () => ctx.store.userFactors.useRecoveryCode(u.id, "h1", T0)));
    assert.equal(uses.filter(Boolean).length, 1);
    assert.equal(await ctx.store.userFactors.recoveryCodesLeft(u.id), 2);
    await ctx.store.userFactors.replaceRecoveryCodes(u.id, ["h4"]);
    assert.equal(await ctx.store.userFactors.useRecoveryCode(u.id, "h2", T0), false);
    assert.equal(await ctx.store.userFactors.recoveryCodesLeft(u.id), 1);
    assert.equal((await ctx.store.userFactors.remove(f.id, "another-user")), undefined);
    assert.equal((await ctx.store.userFactors.remove(f.id, u.id))?.id, f.id);
    assert.equal(await ctx.store.userFactors.recoveryCodesLeft(u.id), 0);
  });

  it("stores a first factor only for a user with none: exactly one of 20 concurrent callers", async () => {
    const u = await user();
    const tries = Array.from({ length: 20 }, () => aFactor(u.id, { type: "passkey", secret: null, credentialId: `c-${id()}`, publicKey: "pk" }));
    const stored = await Promise.all(tries.map((f) => ctx.store.userFactors.insertFirst(f)));
    assert.equal(stored.filter(Boolean).length, 1);
    const kept = await ctx.store.userFactors.list(u.id);
    assert.deepEqual(kept, [tries[stored.indexOf(true)]]);
    // An enrolment still waiting for its first code is no factor, nor is another user's; a taken credential is a conflict.
    const v = await user();
    await ctx.store.userFactors.insert(aFactor(v.id, { confirmed: false }));
    assert.equal(await ctx.store.userFactors.insertFirst(aFactor(v.id)), true);
    const w = await user();
    await assert.rejects(ctx.store.userFactors.insertFirst(aFactor(w.id, { type: "passkey", credentialId: kept[0]!.credentialId })), { name: "ConflictError" });
    assert.deepEqual(await ctx.store.userFactors.list(w.id), []);
  });

  it("gives a WebAuthn challenge to exactly one of 20 takers, and none once expired", async () => {
    const challenge = id();
    const binding = id();
    await ctx.store.webauthnChallenges.insert({ challenge, userId: null, purpose: "signin", binding, expiresAt: T0 + 1000 });
    const taken = await Promise.all(Array.from({ length: 20 }, () => ctx.store.webauthnChallenges.take(challenge, binding, T0)));
    assert.equal(taken.filter(Boolean).length, 1);
    assert.equal(taken.find(Boolean)?.binding, binding);
    const old = id();
    await ctx.store.webauthnChallenges.insert({ challenge: old, userId: "u", purpose: "factor", binding: id(), expiresAt: T0 });
    assert.equal(await ctx.store.webauthnChallenges.take(old, binding, T0), undefined);
  });

  it("answers a WebAuthn challenge only with its binding, and keeps one live challenge per binding", async () => {
    const binding = id();
    const [first, second] = [id(), id()];
    await ctx.store.webauthnChallenges.insert({ challenge: first, userId: null, purpose: "signin", binding, expiresAt: T0 + 1000 });
    assert.equal(await ctx.store.webauthnChallenges.take(first, id(), T0), undefined, "another binding");
    await ctx.store.webauthnChallenges.insert({ challenge: second, userId: null, purpose: "signin", binding, expiresAt: T0 + 1000 });
    assert.equal(await ctx.store.webauthnChallenges.take(first, binding, T0), undefined, "voided by the newer one");
    assert.equal((await ctx.store.webauthnChallenges.take(second, binding, T0))?.challenge, second);
  });

  it("records sign-in steps on a pending request for one user only", async () => {
    const rid = id();
    await ctx.store.authorizationRequests.insert({ id: rid, csrfHash: "h", request: "{}", createdAt: T0, expiresAt: T0 + 1000 });
    assert.equal(await ctx.store.authorizationRequests.recordStep(rid, { userId: "u1", amr: "pwd" }), true);
    assert.equal(await ctx.store.authorizationRequests.recordStep(rid, { userId: "u2", amr: "pwd" }), false);
    assert.equal(await ctx.store.authorizationRequests.recordStep(rid, { userId: "u1", amr: "pwd otp mfa", factorId: "f" }), true);
    const r = await ctx.store.authorizationRequests.findById(rid);
    assert.deepEqual([r?.userId, r?.amr, r?.factorId], ["u1", "pwd otp mfa", "f"]);
  });
});
