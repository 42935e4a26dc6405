import assert from "node:assert/strict";
import { ClientAuthenticator, parseBasicAuth } from "../../src/oauth/clientAuth.js";
import { CLIENT_LOCKED, ClientThrottle, type ClientLockout } from "../../src/oauth/clientThrottle.js";
import { hashGeneratedSecret, randomToken, verifySecret } from "../../src/oauth/secrets.js";
import type { ApplicationRecord } from "../../src/shared/model.js";
import { FakeClock } from "../support/clock.js";
import { describeEachBackend } from "../support/databases.js";
import { T0 } from "../support/storeFixtures.js";

const app = { clientId: "c1", clientSecretHash: "stored-hash", publicClient: false } as ApplicationRecord;

describe("client authentication", () => {
  it("decodes each Basic header as its own, however often and in whatever order they come", () => {
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
    const [a, b] = [basic("a%20b", "s+1"), basic("c", "s:2")];
    for (const header of [a, a, b, a, b, b]) {
      const expected = header === a ? { clientId: "a b", clientSecret: "s 1" } : { clientId: "c", clientSecret: "s:2" };
      assert.deepEqual(parseBasicAuth(header), expected);
    }
    assert.ok(Object.isFrozen(parseBasicAuth(a)), "a decoded header is shared, so it cannot be changed");
    assert.throws(() => parseBasicAuth("Basic !!!!"), /malformed/);
    assert.equal(parseBasicAuth("Bearer x"), undefined);
  });

  it("checks a new secret once for a burst of concurrent requests, then answers from memory", async () => {
    const checks: string[] = [];
    const clients = new ClientAuthenticator({ findByClientId: async (id) => (id === app.clientId ? app : undefined) }, async (secret) => {
      checks.push(secret);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return secret === "right";
    });
    const burst = await Promise.all(Array.from({ length: 50 }, () => clients.authenticate({ clientId: "c1", clientSecret: "right" })));
    assert.ok(burst.every((a) => a === app));
    assert.deepEqual(checks, ["right"]);

    await clients.authenticate({ clientId: "c1", clientSecret: "right" });
    assert.deepEqual(checks, ["right"], "a verified secret is not checked again");

    const wrong = await Promise.allSettled(Array.from({ length: 5 }, () => clients.authenticate({ clientId: "c1", clientSecret: "wrong" })));
    assert.ok(wrong.every((r) => r.status === "rejected" && /invalid_client|authentication failed/.test(String(r.reason))));
    assert.deepEqual(checks, ["right", "wrong"]);
    await assert.rejects(clients.authenticate({ clientId: "c1", clientSecret: "wrong" }));
    assert.deepEqual(checks, ["right", "wrong", "wrong"], "a refused secret is checked every time, never remembered");
  });

  it("takes a public client's client_id alone where public clients are allowed, and a confidential one's never", async () => {
    const spa = { clientId: "spa", clientSecretHash: "unknowable", publicClient: true } as ApplicationRecord;
    const checks: string[] = [];
    const clients = new ClientAuthenticator({ findByClientId: async (id) => [app, spa].find((a) => a.clientId === id) }, async (secret) => {
      checks.push(secret);
      return secret === "right";
    });
    assert.equal(await clients.authenticateOrPublic({ clientId: "spa" }), spa);
    for (const client of [{ clientId: "c1" }, { clientId: "c1", clientSecret: "" }, { clientId: "nobody" }, {}, { clientId: "spa", clientSecret: "guess" }]) {
      await assert.rejects(clients.authenticateOrPublic(client), /authentication failed/, JSON.stringify(client));
    }
    assert.equal(await clients.authenticateOrPublic({ clientId: "c1", clientSecret: "right" }), app, "a secret is checked as anywhere");
    assert.deepEqual(checks, ["guess", "right"], "no secret, no check");
    await assert.rejects(clients.authenticate({ clientId: "spa" }), /authentication failed/, "elsewhere a public client needs what it cannot have");
  });

  it("reads the database for every refusal, also of a client_id its cache knows, as for an unknown one (their time must not say which exist)", async () => {
    const secret = randomToken();
    const known = { clientId: "known", clientSecretHash: hashGeneratedSecret(secret), publicClient: false } as ApplicationRecord;
    // The application cache as the store keeps it: a found application is cached, an unknown client_id never.
    const cache = new Set<string>();
    let reads = 0;
    const clients = new ClientAuthenticator({
      cachedByClientId: (id) => (cache.has(id) ? known : undefined),
      findByClientId: async (id, fromDatabase) => {
        if (cache.has(id) && !fromDatabase) return known;
        reads++;
        if (id !== known.clientId) return undefined;
        cache.add(id);
        return known;
      },
    });
    const readsOf = async (attempt: () => Promise<unknown>) => {
      reads = 0;
      await attempt().catch(() => undefined);
      return reads;
    };
    assert.equal(await readsOf(() => clients.authenticate({ clientId: "known", clientSecret: secret })), 1, "the first lookup reads the database");
    assert.equal(await readsOf(() => clients.authenticate({ clientId: "known", clientSecret: secret })), 0, "then the cache answers");
    for (const client of [{ clientId: "known", clientSecret: "wrong" }, { clientId: "known" }, { clientId: "nobody", clientSecret: "wrong" }, { clientId: "nobody" }]) {
      assert.equal(await readsOf(() => clients.authenticate(client)), 1, `authenticate ${JSON.stringify(client)}`);
      assert.equal(await readsOf(() => clients.authenticateOrPublic(client)), 1, `authenticateOrPublic ${JSON.stringify(client)}`);
    }
  });
});

/**
 * The failure budgets in the store: however many wrong secrets arrive at
 * once, no more scrypt checks run than a budget holds (issue 24, item 5).
 */
describeEachBackend("client authentication budgets", (ctx) => {
  const generated = randomToken();
  const apps = new Map<string, ApplicationRecord>([
    ["chosen", { clientId: "chosen", clientSecretHash: "scrypt-stand-in" } as ApplicationRecord],
    ["chosen-2", { clientId: "chosen-2", clientSecretHash: "scrypt-stand-in-2" } as ApplicationRecord],
    ["generated", { clientId: "generated", clientSecretHash: hashGeneratedSecret(generated) } as ApplicationRecord],
  ]);
  const policy = { maxFailures: 4, maxFailuresPerAddress: 6, lockoutSeconds: 300 };

  function authenticator(clock: FakeClock, lockouts: ClientLockout[] = []) {
    const costly: string[] = [];
    const clients = new ClientAuthenticator(
      { findByClientId: async (id) => apps.get(id) },
      async (secret, hash) => {
        if (hash.startsWith("scrypt-stand-in")) {
          costly.push(secret);
          await new Promise((resolve) => setTimeout(resolve, 5));
          return secret === "the-chosen-secret-0123";
        }
        return verifySecret(secret, hash);
      },
      new ClientThrottle(ctx.store.loginFailures, clock, policy, (lockout) => lockouts.push(lockout)),
    );
    return { clients, costly };
  }
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "ok",
      (err: Error) => (/too many failed/.test(err.message) ? "locked" : /invalid_client/.test(err.message) ? "refused" : err.message),
    );

  // Each test on a day of its own: the budgets of the ones before have ended.
  const DAY_MS = 24 * 3600 * 1000;
  it("runs no more scrypt checks than the client_id's budget, for 60 concurrent wrong secrets from 60 addresses", async () => {
    const clock = new FakeClock(T0);
    const lockouts: ClientLockout[] = [];
    const { clients, costly } = authenticator(clock, lockouts);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => outcome(clients.authenticate({ clientId: "chosen", clientSecret: `guess-${i}-0123456789` }, `10.0.0.${i}`))),
    );
    assert.equal(costly.length, policy.maxFailures);
    assert.equal(results.filter((r) => r === "refused").length, policy.maxFailures);
    assert.equal(results.filter((r) => r === "locked").length, 60 - policy.maxFailures);
    assert.deepEqual(lockouts.map((l) => [l.kind, l.subject]), [["client", "chosen"]], "logged once, by id, never with a secret");

    // Locked: not even the right secret is checked, until the lockout ends.
    assert.equal(await outcome(clients.authenticate({ clientId: "chosen", clientSecret: "the-chosen-secret-0123" }, "10.1.0.1")), "locked");
    assert.equal(costly.length, policy.maxFailures);
    clock.advanceSeconds(policy.lockoutSeconds);
    assert.equal(await outcome(clients.authenticate({ clientId: "chosen", clientSecret: "the-chosen-secret-0123" }, "10.1.0.1")), "ok");
  });

  it("runs no more scrypt checks than the address's budget, whatever client_ids it names", async () => {
    const clock = new FakeClock(T0 + DAY_MS);
    const { clients, costly } = authenticator(clock);
    const results = await Promise.all(
      ["chosen", "chosen-2", "unknown"].flatMap((clientId) =>
        Array.from({ length: 10 }, (_, i) => outcome(clients.authenticate({ clientId, clientSecret: `guess-${i}-0123456789` }, "10.2.0.1"))),
      ),
    );
    // Two ids' budgets (4 + 4) hold more than the address's (6).
    assert.equal(costly.length, policy.maxFailuresPerAddress);
    assert.equal(results.filter((r) => r === "ok").length, 0);
    assert.equal(await outcome(clients.authenticate({ clientId: "chosen", clientSecret: "the-chosen-secret-0123" }, "10.2.0.1")), "locked");
  });

  it("never locks out a client that knows its generated secret, nor one whose chosen secret it already verified", async () => {
    const clock = new FakeClock(T0 + 2 * DAY_MS);
    const { clients, costly } = authenticator(clock);
    assert.equal(await outcome(clients.authenticate({ clientId: "chosen", clientSecret: "the-chosen-secret-0123" }, "10.3.0.1")), "ok");
    const before = costly.length;
    const flood = await Promise.all(
      ["generated", "unknown", "chosen"].flatMap((clientId) =>
        Array.from({ length: 30 }, (_, i) => outcome(clients.authenticate({ clientId, clientSecret: `guess-${i}-0123456789` }, "10.3.0.1"))),
      ),
    );
    // Wrong generated secrets and unknown ids cost a SHA-256: refused, never counted, never locked.
    assert.deepEqual(new Set(flood.slice(0, 60)), new Set(["refused"]));
    assert.ok(flood.slice(60).includes("locked"), "the chosen secret's id is locked");
    assert.equal(costly.length - before, policy.maxFailures);
    assert.equal(await outcome(clients.authenticate({ clientId: "generated", clientSecret: generated }, "10.3.0.1")), "ok");
    assert.equal(await outcome(clients.authenticate({ clientId: "chosen", clientSecret: "the-chosen-secret-0123" }, "10.3.0.1")), "ok");
    assert.equal(costly.length - before, policy.maxFailures, "the known secrets were answered without an scrypt");
    assert.equal(await outcome(clients.authenticate({ clientId: "chosen", clientSecret: "another-guess-0123456789" }, "10.3.0.1")), "locked");
    assert.match(CLIENT_LOCKED, /try again later/);
  });
});
