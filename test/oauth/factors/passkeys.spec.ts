import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { describeEachBackend } from "../../support/databases.js";
import { FakeClock } from "../../support/clock.js";
import { SoftAuthenticator } from "../../support/softAuthenticator.js";
import { SecondFactors } from "../../../src/oauth/factors/secondFactors.js";
import { Passkeys, passkeysPossible, relyingPartyOf } from "../../../src/oauth/factors/passkeys.js";
import { acrOf } from "../../../src/oauth/factors/amr.js";
import { LoginThrottle } from "../../../src/oauth/loginThrottle.js";
import { SecretBox } from "../../../src/federation/secretBox.js";
import type { AuditRecord } from "../../../src/shared/audit.js";
import type { UserRecord } from "../../../src/shared/model.js";

const ISSUER = "https://id.example";
const ORIGIN = "https://id.example";

/**
 * Passkeys (issue #46 §2) against a software authenticator, on every
 * backend: registration, a whole sign-in, a second factor, and the attacks
 * (a replayed assertion, a cloned passkey, another origin, an expired or
 * reused challenge).
 */
describeEachBackend("passkeys (WebAuthn)", (ctx) => {
  const clock = new FakeClock(1_750_000_000_000);
  const events: AuditRecord[] = [];
  let passkeys: Passkeys;
  let factors: SecondFactors;

  before(() => {
    const throttle = new LoginThrottle(ctx.store.loginFailures, clock, { maxFailures: 5, lockoutSeconds: 300 });
    const audit = { record: (e: AuditRecord) => events.push(e) };
    factors = new SecondFactors(ctx.store.userFactors, clock, new SecretBox(undefined), throttle, audit, "id.example");
    passkeys = new Passkeys(ctx.store.userFactors, ctx.store.webauthnChallenges, ctx.store.users, factors, clock, audit, relyingPartyOf(ISSUER));
  });

  async function aUser(): Promise<UserRecord> {
    const user: UserRecord = {
      id: randomUUID(), name: `u-${randomBytes(6).toString("hex")}`, passwordHash: null, displayName: "", email: "", emailVerified: false,
      avatar: "", phone: "", address: "", isAdmin: false, disabled: false, properties: {}, createdAt: 0, updatedAt: 0,
    };
    await ctx.store.users.insert(user);
    return user;
  }

  /** A user with one passkey on `authenticator`, registered from the session `binding`. */
  async function registered(authenticator = new SoftAuthenticator({ origin: ORIGIN })) {
    const user = await aUser();
    const binding = `session-${randomUUID()}`;
    const options = await passkeys.registrationOptions(user, binding);
    const codes = await passkeys.register(user, JSON.stringify(authenticator.register(options)), "Laptop", binding);
    assert.ok(codes, "registered");
    return { user, authenticator, codes };
  }

  async function signIn(authenticator: SoftAuthenticator, override: Parameters<SoftAuthenticator["assert"]>[2] = {}) {
    const binding = `request-${randomUUID()}`;
    const response = JSON.stringify(authenticator.assert(await passkeys.signInOptions(binding), "id.example", override));
    return { response, binding, result: await passkeys.signIn(response, binding) };
  }

  it("registers a discoverable passkey with user verification for the issuer host, shows recovery codes with the first, and audits it", async () => {
    const user = await aUser();
    const options = await passkeys.registrationOptions(user, "s1");
    assert.equal(options.rp.id, "id.example");
    assert.deepEqual([options.authenticatorSelection?.residentKey, options.authenticatorSelection?.userVerification], ["required", "required"]);
    const authenticator = new SoftAuthenticator({ origin: ORIGIN });
    const codes = await passkeys.register(user, JSON.stringify(authenticator.register(options)), "  My laptop  ", "s1");
    assert.equal(codes?.length, 10, "the first factor brings recovery codes");
    const [stored] = await passkeys.list(user.id);
    assert.deepEqual([stored?.name, stored?.credentialId, stored?.type], ["My laptop", authenticator.id, "passkey"]);
    assert.ok(events.some((e) => e.event === "passkey_added" && e.outcome === "success" && e.userId === user.id));
    // A second passkey: no new codes; the first is excluded from its options.
    const again = await passkeys.registrationOptions(user, "s1");
    assert.deepEqual(again.excludeCredentials?.map((c) => c.id), [authenticator.id]);
    assert.deepEqual(await passkeys.register(user, JSON.stringify(new SoftAuthenticator({ origin: ORIGIN }).register(again)), "Phone", "s1"), []);
    // The same credential twice is refused, not a crash.
    const third = await passkeys.registrationOptions(user, "s1");
    assert.equal(await passkeys.register(user, JSON.stringify(authenticator.register(third)), "Again", "s1"), undefined);
  });

  it("enrols a first passkey at sign-in: a second factor's amr, recovery codes, the unchosen code secret gone; never beside a factor", async () => {
    const user = await aUser();
    const totp = await factors.beginTotp(user);
    const options = await passkeys.registrationOptions(user, "pending-1");
    const enrolled = await passkeys.enrolFirst(user, JSON.stringify(new SoftAuthenticator({ origin: ORIGIN }).register(options)), "pending-1");
    assert.deepEqual(enrolled?.proof.amr, ["hwk", "user"]);
    assert.equal(enrolled?.codes.length, 10);
    assert.deepEqual((await passkeys.list(user.id)).map((f) => [f.id, f.name]), [[enrolled?.proof.factorId, "Passkey"]]);
    assert.equal(await factors.resumeTotp(user, totp.factorId), undefined);
    assert.ok(events.some((e) => e.event === "passkey_added" && e.outcome === "success" && e.details?.factorId === enrolled?.proof.factorId));
    const synced = await aUser();
    const syncedOptions = await passkeys.registrationOptions(synced, "pending-s");
    assert.deepEqual((await passkeys.enrolFirst(synced, JSON.stringify(new SoftAuthenticator({ origin: ORIGIN, synced: true }).register(syncedOptions)), "pending-s"))?.proof.amr, ["swk", "user"]);
    // A user with a factor enrols none here (the account page adds more).
    const again = await passkeys.registrationOptions(user, "pending-2");
    assert.equal(await passkeys.enrolFirst(user, JSON.stringify(new SoftAuthenticator({ origin: ORIGIN }).register(again)), "pending-2"), undefined);
    assert.ok(events.some((e) => e.event === "passkey_added" && e.outcome === "failure" && e.userId === user.id && e.details?.reason === "has_factor"));
    assert.equal((await passkeys.list(user.id)).length, 1);
  });

  it("attack: an enrolment answered once for 10 parallel posts, or by parallel challenges of one user, adds one factor", async () => {
    const user = await aUser();
    const once = JSON.stringify(new SoftAuthenticator({ origin: ORIGIN }).register(await passkeys.registrationOptions(user, "pending-once")));
    const posts = await Promise.all(Array.from({ length: 10 }, () => passkeys.enrolFirst(user, once, "pending-once")));
    assert.equal(posts.filter(Boolean).length, 1);
    // Two sign-ins of one user at the enrol step at once (the user, and someone holding the password): one factor.
    const other = await aUser();
    const answers = await Promise.all(["pending-x", "pending-y", "pending-z"].map(async (binding) => ({
      binding, response: JSON.stringify(new SoftAuthenticator({ origin: ORIGIN }).register(await passkeys.registrationOptions(other, binding))),
    })));
    const raced = await Promise.all(answers.map(({ binding, response }) => passkeys.enrolFirst(other, response, binding)));
    assert.equal(raced.filter(Boolean).length, 1);
    assert.equal((await passkeys.list(other.id)).length, 1);
  });

  it("attack: an enrolment answering another sign-in's challenge, or another user's, is refused", async () => {
    const [alice, bob] = [await aUser(), await aUser()];
    const authenticator = new SoftAuthenticator({ origin: ORIGIN });
    // Alice's pending sign-in's challenge, posted on another pending sign-in of hers.
    const foreign = await passkeys.registrationOptions(alice, "pending-a");
    assert.equal(await passkeys.enrolFirst(alice, JSON.stringify(authenticator.register(foreign)), "pending-b"), undefined);
    // Bob's challenge on Bob's sign-in, answered as Alice.
    const bobs = await passkeys.registrationOptions(bob, "pending-c");
    assert.equal(await passkeys.enrolFirst(alice, JSON.stringify(authenticator.register(bobs)), "pending-c"), undefined);
    // A second factor's challenge is no registration's.
    const assertion = await passkeys.factorOptions(alice, "pending-d");
    assert.equal(await passkeys.enrolFirst(alice, JSON.stringify(authenticator.register({ ...(await passkeys.registrationOptions(alice, "pending-e")), challenge: assertion.challenge })), "pending-d"), undefined);
    assert.deepEqual([await passkeys.list(alice.id), await passkeys.list(bob.id)], [[], []]);
  });

  it("signs in with no user name: amr hwk, user, mfa (acr mfa); swk for a synced passkey", async () => {
    const { user, authenticator } = await registered();
    const { result } = await signIn(authenticator);
    assert.equal(result?.user.id, user.id);
    assert.deepEqual(result?.proof.amr, ["hwk", "user", "mfa"]);
    assert.equal(acrOf(result!.proof.amr), "mfa");
    const synced = await registered(new SoftAuthenticator({ origin: ORIGIN, synced: true }));
    assert.deepEqual((await signIn(synced.authenticator)).result?.proof.amr, ["swk", "user", "mfa"]);
    assert.ok(events.some((e) => e.event === "factor_used" && e.outcome === "success" && e.details?.type === "passkey" && e.userId === user.id));
  });

  it("refuses a whole sign-in without user verification, but takes such a passkey as a second factor (no `user`)", async () => {
    const { user, authenticator } = await registered();
    const lazy = Object.assign(authenticator, { options: { ...authenticator.options, userVerified: false } });
    assert.equal((await signIn(lazy)).result, undefined);
    const options = await passkeys.factorOptions(user, "r1");
    assert.deepEqual(options.allowCredentials?.map((c) => c.id), [authenticator.id]);
    assert.deepEqual((await passkeys.verifyFactor(user, JSON.stringify(lazy.assert(options, "id.example")), "r1"))?.amr, ["hwk"]);
  });

  it("takes a passkey as a second factor only for its own user", async () => {
    const alice = await registered();
    const bob = await registered();
    const options = await passkeys.factorOptions(bob.user, "r2");
    // Bob's challenge, answered with Alice's passkey.
    assert.equal(await passkeys.verifyFactor(bob.user, JSON.stringify(alice.authenticator.assert(options, "id.example")), "r2"), undefined);
  });

  it("attack: a replayed WebAuthn assertion is refused, also by 10 parallel replays", async () => {
    const { authenticator } = await registered();
    const { response, binding, result } = await signIn(authenticator);
    assert.ok(result);
    const replays = await Promise.all(Array.from({ length: 10 }, () => passkeys.signIn(response, binding)));
    assert.deepEqual(replays.filter(Boolean), []);
    // A fresh assertion sent 10 times at once: one sign-in.
    const binding2 = "request-parallel";
    const once = JSON.stringify(authenticator.assert(await passkeys.signInOptions(binding2), "id.example"));
    const raced = await Promise.all(Array.from({ length: 10 }, () => passkeys.signIn(once, binding2)));
    assert.equal(raced.filter(Boolean).length, 1);
  });

  it("attack: a cloned passkey (counter going back) is refused", async () => {
    const { authenticator } = await registered();
    authenticator.counter = 41;
    assert.ok((await signIn(authenticator)).result, "counter 42 taken");
    // The clone was copied when the counter stood at 10: its next answer carries 11.
    authenticator.counter = 10;
    assert.equal((await signIn(authenticator)).result, undefined);
    assert.ok(events.some((e) => e.event === "factor_used" && e.outcome === "failure" && e.details?.reason === "invalid_response"));
    // The same counter again is no better.
    authenticator.counter = 41;
    assert.equal((await signIn(authenticator)).result, undefined);
    authenticator.counter = 42;
    assert.ok((await signIn(authenticator)).result, "the genuine one goes on");
    // A clone racing the genuine key with the same counter, each with a challenge of its own: where both
    // read the old counter, the library passes both and the store's conditional UPDATE lets one through.
    const answers = await Promise.all(["race-a", "race-b"].map(async (binding) => ({ binding, options: await passkeys.signInOptions(binding) })));
    const signed = answers.map(({ binding, options }) => {
      authenticator.counter = 50;
      return { binding, response: JSON.stringify(authenticator.assert(options, "id.example")) };
    });
    const raced = await Promise.all(signed.map(({ binding, response }) => passkeys.signIn(response, binding)));
    assert.equal(raced.filter(Boolean).length, 1);
  });

  it("attack: an assertion for another origin, or another relying party, is refused", async () => {
    const { authenticator } = await registered();
    assert.equal((await signIn(authenticator, { origin: "https://id.example.evil.test" })).result, undefined);
    const binding = "request-rp";
    const options = await passkeys.signInOptions(binding);
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert({ ...options, rpId: "evil.test" }, "evil.test")), binding), undefined);
    const register = new SoftAuthenticator({ origin: "https://evil.test" });
    const user = await aUser();
    const regOptions = await passkeys.registrationOptions(user, "s-evil");
    assert.equal(await passkeys.register(user, JSON.stringify(register.register(regOptions)), "Evil", "s-evil"), undefined);
    assert.deepEqual(await passkeys.list(user.id), []);
  });

  it("attack: an expired challenge, a reused one, one of another flow or one never issued is refused", async () => {
    const { user, authenticator } = await registered();
    // Expired: five minutes on.
    let binding = "request-late";
    let options = await passkeys.signInOptions(binding);
    clock.advanceSeconds(5 * 60);
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert(options, "id.example")), binding), undefined);
    // Reused: the challenge went with its first answer, even a refused one.
    binding = "request-reuse";
    options = await passkeys.signInOptions(binding);
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert(options, "id.example", { origin: "https://evil.test" })), binding), undefined);
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert(options, "id.example")), binding), undefined);
    // Another flow's: a challenge issued to another pending sign-in, or for a second factor.
    options = await passkeys.signInOptions("request-a");
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert(options, "id.example")), "request-b"), undefined);
    options = await passkeys.factorOptions(user, "request-c");
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert(options, "id.example")), "request-c"), undefined);
    // Never issued.
    options = await passkeys.signInOptions("request-d");
    assert.equal(await passkeys.signIn(JSON.stringify(authenticator.assert(options, "id.example", { challenge: randomBytes(32).toString("base64url") })), "request-d"), undefined);
    // Garbage is a refusal, not an error.
    for (const junk of ["", "null", "[]", "{", JSON.stringify({ id: 1, response: { clientDataJSON: 5 } })]) assert.equal(await passkeys.signIn(junk, "request-d"), undefined);
  });

  it("renames and removes a passkey of the user only, auditing passkey_removed", async () => {
    const { user } = await registered();
    const other = await aUser();
    const [factor] = await passkeys.list(user.id);
    assert.equal(await passkeys.rename(other, factor!.id, "Mine now"), false);
    assert.equal(await passkeys.rename(user, factor!.id, " Work key "), true);
    assert.equal((await passkeys.list(user.id))[0]?.name, "Work key");
    assert.equal(await passkeys.remove(other, factor!.id), false);
    assert.equal(await passkeys.remove(user, factor!.id), true);
    assert.deepEqual(await passkeys.list(user.id), []);
    assert.ok(events.some((e) => e.event === "passkey_removed" && e.userId === user.id && e.details?.factorId === factor!.id));
  });

  it("is off where the issuer is an IP address, which browsers refuse as a relying-party id", () => {
    assert.equal(passkeysPossible(relyingPartyOf("http://127.0.0.1:8000")), false);
    assert.equal(passkeysPossible(relyingPartyOf("http://[::1]:8000")), false);
    assert.equal(passkeysPossible(relyingPartyOf("http://localhost:8000")), true);
    assert.deepEqual(relyingPartyOf("http://localhost:8000/"), { id: "localhost", origin: "http://localhost:8000", name: "localhost" });
  });
});
