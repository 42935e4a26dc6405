import assert from "node:assert/strict";
import { setImmediate as nextTurn } from "node:timers/promises";
import { LoginThrottle } from "../../src/oauth/loginThrottle.js";
import { noMetrics } from "../../src/oauth/metrics.js";
import { UserAuthenticator } from "../../src/oauth/userAuth.js";
import { noAudit } from "../../src/shared/audit.js";
import type { UserRecord } from "../../src/shared/model.js";
import type { UserRepository } from "../../src/store/users.js";
import type { LoginFailureRepository } from "../../src/store/loginFailures.js";
import { FakeClock } from "../support/clock.js";

describe("user password checks", () => {
  /**
   * Issue 41: a flood of sign-ins (many names, many addresses, so no lockout
   * stops it) must not run its scrypt checks all at once: each holds one of
   * libuv's threads, which the database and every other hash also need.
   * Password checks take their turn, one at a time per process, as client
   * secrets' do. The checks are held until the test lets each go, so what is
   * counted is how many run together, not how long anything takes.
   */
  it("runs at most one password check at a time, however many sign-ins arrive at once", async () => {
    const FLOOD = 60;
    const RIGHT = "the-right-password";
    const alice = { id: "u1", name: "alice", passwordHash: "scrypt$alice", disabled: false } as UserRecord;
    let lookups = 0;
    const users = {
      findByName: async (name: string) => {
        lookups++;
        return name === alice.name ? alice : undefined;
      },
    } as unknown as UserRepository;
    const unused = async () => assert.fail("no lockout policy: the store is never asked");
    const failures = { reserveFailure: unused, refundFailure: unused, clear: unused, deleteStale: unused } as unknown as LoginFailureRepository;
    const throttle = new LoginThrottle(failures, new FakeClock(), { maxFailures: 0, lockoutSeconds: 0 });

    let running = 0;
    let peak = 0;
    let checks = 0;
    const held: Array<() => void> = [];
    let wake: (() => void) | undefined;
    const verify = (password: string) =>
      new Promise<boolean>((resolve) => {
        checks++;
        running++;
        peak = Math.max(peak, running);
        held.push(() => {
          running--;
          resolve(password === RIGHT);
        });
        wake?.();
      });
    const nextHeld = async () => {
      while (held.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return held.shift()!;
    };

    const authenticator = new UserAuthenticator(users, throttle, noMetrics, noAudit, verify);
    const attempts = Array.from({ length: FLOOD }, (_, i) =>
      i === FLOOD / 2
        ? authenticator.authenticate(alice.name, RIGHT, "192.0.2.1").then((user) => user.id)
        : authenticator.authenticate(`name-${i}`, `guess-${i}`, `192.0.2.${i}`).then(
            () => "signed in",
            (err: Error) => err.message,
          ),
    );
    // Every attempt has looked its user up; one more turn lets each reach its check or its place in line.
    while (lookups < FLOOD) await nextTurn();
    await nextTurn();
    assert.equal(running, 1, "checks running while the first is held");

    for (let released = 0; released < FLOOD; released++) (await nextHeld())();
    const outcomes = await Promise.all(attempts);
    assert.equal(checks, FLOOD, "every attempt was checked, in turn");
    assert.equal(peak, 1);
    assert.equal(outcomes.filter((o) => o === alice.id).length, 1, "the right password still signs in");
    assert.equal(outcomes.filter((o) => o === "invalid_grant: invalid username or password").length, FLOOD - 1);
  });
});
