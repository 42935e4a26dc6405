import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { describeEachBackend } from "../../support/databases.js";
import { FakeClock } from "../../support/clock.js";
import { SecondFactors } from "../../../src/oauth/factors/secondFactors.js";
import { totpCode } from "../../../src/oauth/factors/totp.js";
import { LoginThrottle, LOGIN_LOCKED } from "../../../src/oauth/loginThrottle.js";
import { SecretBox } from "../../../src/federation/secretBox.js";
import type { AuditRecord } from "../../../src/shared/audit.js";
import type { UserRecord } from "../../../src/shared/model.js";

const STEP = 30_000;
const MAX_FAILURES = 5;

describeEachBackend("one-time codes and recovery codes (RFC 6238)", (ctx) => {
  const clock = new FakeClock(1_750_000_000_000);
  const events: AuditRecord[] = [];
  let factors: SecondFactors;
  let box: SecretBox;

  before(() => {
    box = new SecretBox("k".repeat(40));
    const throttle = new LoginThrottle(ctx.store.loginFailures, clock, { maxFailures: MAX_FAILURES, lockoutSeconds: 300 });
    factors = new SecondFactors(ctx.store.userFactors, clock, box, throttle, { record: (e) => events.push(e) }, "id.example");
  });

  async function aUser(): Promise<UserRecord> {
    const user: UserRecord = {
      id: randomUUID(), name: `u-${randomBytes(6).toString("hex")}`, passwordHash: null, displayName: "", email: "", emailVerified: false,
      avatar: "", phone: "", address: "", isAdmin: false, disabled: false, properties: {}, createdAt: 0, updatedAt: 0,
    };
    await ctx.store.users.insert(user);
    return user;
  }

  /** A user with a confirmed one-time code; its secret as shown at enrolment. */
  async function enrolled(): Promise<{ user: UserRecord; secret: string; recovery: string[] }> {
    const user = await aUser();
    const { factorId, secret } = await factors.beginTotp(user);
    const recovery = await factors.confirmTotp(user, factorId, totpCode(secret, clock.now()));
    assert.ok(recovery);
    // Two steps on: the enrolment took its step, and the previous step must be free for the tests.
    clock.advanceSeconds(60);
    return { user, secret, recovery };
  }

  it("enrols only with a valid code, shows an otpauth URI for the issuer host and user, and seals the secret", async () => {
    const user = await aUser();
    const { factorId, secret, uri } = await factors.beginTotp(user);
    const url = new URL(uri);
    assert.equal(url.protocol, "otpauth:");
    assert.equal(url.searchParams.get("secret"), secret);
    assert.equal(url.searchParams.get("issuer"), "id.example");
    assert.equal(url.host, "totp");
    assert.equal(decodeURIComponent(url.pathname), `/id.example:${user.name}`);
    assert.deepEqual(await factors.list(user.id), [], "not a factor before its first code");
    const stored = await ctx.store.userFactors.find(factorId);
    assert.ok(SecretBox.isSealed(stored!.secret!) && !stored!.secret!.includes(secret));
    assert.equal(await factors.confirmTotp(user, factorId, "000000"), undefined);
    const codes = await factors.confirmTotp(user, factorId, totpCode(secret, clock.now()));
    assert.equal(codes?.length, 10);
    assert.equal((await factors.list(user.id)).length, 1);
    assert.ok(events.some((e) => e.event === "factor_enrolled" && e.outcome === "success" && e.userId === user.id));
  });

  it("accepts the previous and the next step, refuses two steps away", async () => {
    const { user, secret } = await enrolled();
    const now = clock.now();
    assert.equal(await factors.verify(user, totpCode(secret, now - 2 * STEP)), undefined);
    assert.equal(await factors.verify(user, totpCode(secret, now + 2 * STEP)), undefined);
    assert.deepEqual((await factors.verify(user, totpCode(secret, now - STEP)))?.amr, ["otp"]);
    assert.ok(await factors.verify(user, totpCode(secret, now + STEP)));
  });

  it("attack: a replayed code is refused within its window", async () => {
    const { user, secret } = await enrolled();
    const code = totpCode(secret, clock.now());
    assert.ok(await factors.verify(user, code));
    const replays = await Promise.all(Array.from({ length: MAX_FAILURES - 1 }, () => factors.verify(user, code)));
    assert.equal(replays.filter(Boolean).length, 0);
    assert.ok(events.some((e) => e.event === "factor_used" && e.outcome === "failure" && e.userId === user.id));
  });

  it("attack: 200 parallel guesses check at most --login-max-failures codes, then the right code is locked out too", async () => {
    const { user, secret } = await enrolled();
    const checked = events.length;
    let refusedLocked = 0;
    const right = totpCode(secret, clock.now());
    const guesses = Array.from({ length: 200 }, (_, i) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, "0"));
    const outcomes = await Promise.all(
      guesses.map((g) =>
        factors.verify(user, g).catch((err: Error) => {
          assert.equal((err as { description?: string }).description, LOGIN_LOCKED);
          refusedLocked++;
          return undefined;
        }),
      ),
    );
    assert.equal(outcomes.filter(Boolean).length, 0);
    const failures = events.slice(checked).filter((e) => e.event === "factor_used" && e.userId === user.id);
    assert.ok(failures.length <= MAX_FAILURES, `${failures.length} codes checked`);
    assert.equal(refusedLocked, 200 - failures.length);
    await assert.rejects(factors.verify(user, right), { description: LOGIN_LOCKED });
  });

  it("attack: a recovery code works once, and a new set voids the old one", async () => {
    const { user, recovery } = await enrolled();
    const [first, second] = recovery;
    const uses = await Promise.all(Array.from({ length: 3 }, () => factors.verify(user, first!.toLowerCase())));
    assert.equal(uses.filter(Boolean).length, 1);
    assert.equal(await factors.recoveryCodesLeft(user.id), 9);
    assert.ok(events.some((e) => e.event === "recovery_code_used" && e.userId === user.id));
    const fresh = await factors.newRecoveryCodes(user);
    assert.equal(await factors.verify(user, second!), undefined);
    assert.ok(await factors.verify(user, fresh[0]!));
  });

  it("removes a factor, and its recovery codes with the last one", async () => {
    const { user, recovery } = await enrolled();
    const [factor] = await factors.list(user.id);
    assert.equal(await factors.remove(user, factor!.id), true);
    assert.equal(await factors.has(user.id), false);
    assert.equal(await factors.verify(user, recovery[0]!), undefined);
    assert.ok(events.some((e) => e.event === "factor_removed" && e.userId === user.id));
  });
});
