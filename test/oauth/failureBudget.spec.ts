import assert from "node:assert/strict";
import { ClientThrottle } from "../../src/oauth/clientThrottle.js";
import { addressSubject } from "../../src/oauth/failureBudget.js";
import { LoginThrottle, type Lockout } from "../../src/oauth/loginThrottle.js";
import { FakeClock } from "../support/clock.js";
import { describeEachBackend } from "../support/databases.js";
import { T0 } from "../support/storeFixtures.js";

describe("the address a per-address budget counts", () => {
  it("is an IPv6 client's /64, however the address is written", () => {
    for (const address of ["2001:db8:1:2::1", "2001:0DB8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2:0:0:0:0", "2001:db8:1:2::1.2.3.4", "2001:db8:1:2::7%eth0"]) {
      assert.equal(addressSubject(address), "2001:db8:1:2::/64", address);
    }
    assert.equal(addressSubject("2001:db8:1:3::1"), "2001:db8:1:3::/64");
    assert.equal(addressSubject("2001:db8::9"), "2001:db8::/64");
    assert.equal(addressSubject("2001:0:0:5:1::"), "2001:0:0:5::/64");
    assert.equal(addressSubject("::1"), "::/64");
    assert.equal(addressSubject("fe80::1%lo"), "fe80::/64");
  });

  it("is an IPv4 client's own address, IPv4-mapped IPv6 included", () => {
    for (const address of ["203.0.113.7", "::ffff:203.0.113.7", "::FFFF:203.0.113.7", "::ffff:cb00:7107", "0:0:0:0:0:ffff:203.0.113.7"]) {
      assert.equal(addressSubject(address), "203.0.113.7", address);
    }
    assert.equal(addressSubject("203.0.113.8"), "203.0.113.8");
  });

  it("is anything else as written", () => {
    assert.equal(addressSubject("not-an-address"), "not-an-address");
    assert.equal(addressSubject(""), "");
  });
});

/** The attack of issue 41 §7 at the throttles themselves, on the real store: one /64, a fresh address per guess. */
describeEachBackend("per-address budgets of one IPv6 /64", (ctx) => {
  const DAY_MS = 24 * 3600 * 1000;
  const lockoutSeconds = 300;
  const inOneNetwork = (i: number) => `2001:db8:aa:bb:${(i + 1).toString(16)}::${(i * 7 + 1).toString(16)}`;

  it("lets the sign-ins of one /64 check no more passwords than the address's budget, from however many of its addresses", async () => {
    const lockouts: Lockout[] = [];
    const throttle = new LoginThrottle(ctx.store.loginFailures, new FakeClock(T0), { maxFailures: 100, maxFailuresPerAddress: 4, lockoutSeconds }, (l) => lockouts.push(l));
    let checks = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        throttle
          .attempt(`name-${i}`, inOneNetwork(i), async () => {
            checks++;
            return undefined;
          })
          .then(() => "wrong", (err: Error) => err.message),
      ),
    );
    assert.equal(checks, 4);
    assert.equal(outcomes.filter((o) => o === "wrong").length, 4);
    assert.deepEqual(lockouts.map((l) => [l.kind, l.subject]), [["address", "2001:db8:aa:bb::/64"]]);
    const fromElsewhere = await throttle.attempt("name-0", "2001:db8:aa:bc::1", async () => "signed in");
    assert.equal(fromElsewhere, "signed in", "the next /64 keeps its own budget");
  });

  it("lets client authentication from one /64 run no more costly checks than the address's budget", async () => {
    const throttle = new ClientThrottle(ctx.store.loginFailures, new FakeClock(T0 + DAY_MS), { maxFailures: 100, maxFailuresPerAddress: 4, lockoutSeconds });
    let reserved = 0;
    for (let i = 0; i < 40; i++) {
      try {
        await throttle.reserve(`client-${i}`, inOneNetwork(i));
        reserved++;
      } catch (err) {
        assert.match((err as Error).message, /too many failed client authentications/);
      }
    }
    assert.equal(reserved, 4);
    await throttle.reserve("client-0", "2001:db8:aa:bc::1");
  });
});
