import assert from "node:assert/strict";
import { ClientAuthenticator, parseBasicAuth } from "../../src/oauth/clientAuth.js";
import type { ApplicationRecord } from "../../src/shared/model.js";

const app = { clientId: "c1", clientSecretHash: "stored-hash" } as ApplicationRecord;

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
});
