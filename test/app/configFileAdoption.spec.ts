import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FAKE_PROFILE, startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import { postJson } from "../support/oauth.js";
import { startTestServer } from "../support/server.js";

/**
 * Issue #41 §4. A provider sign-in creates a local user named after the
 * upstream preferred_username ("carol"); an operator who later adds a user
 * of that name to --config must not adopt that account (and make it admin).
 */
describe("the config file and users created through a provider (issue #41 §4)", () => {
  let fake: FakeUpstream;
  let database: string;
  let provider: Record<string, unknown>;

  before(async () => {
    fake = await startFakeUpstream();
    database = join(mkdtempSync(join(tmpdir(), "identity-adoption-")), "identity.sqlite");
    provider = fake.provider("upstream");
    const server = await startTestServer({ database, config: { providers: [provider], users: [{ name: "dave", password: "pw-dave-123" }] } });
    try {
      // Anyone with an account at the provider: no sign-in here first.
      fake.profile = { ...FAKE_PROFILE, sub: "carol-at-upstream", preferred_username: "carol" };
      const begun = await postJson(`${server.url}/api/federation/begin-login`, { provider: "upstream" });
      const done = await postJson(`${server.url}/api/federation/complete-login`, { state: begun.body.state, code: "c", login_secret: begun.body.login_secret, provider: "upstream" });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.user.name, "carol");
      // A local user who linked an account through a provider keeps a password: still the operator's.
      const dave = (await server.store.users.findByName("dave"))!;
      await server.store.federatedIdentities.insert({
        provider: "upstream", externalIdType: "sub", externalId: "dave-at-upstream", userId: dave.id, username: "dave", createdAt: Date.now(), updatedAt: Date.now(),
      });
    } finally {
      await server.close();
    }
  });
  after(() => fake?.close());

  it("stops the start when an entry names a user created through a provider, naming the entry and why; the user stays as it was", async () => {
    await assert.rejects(
      startTestServer({ database, config: { providers: [provider], users: [{ name: "dave", password: "pw-dave-123" }, { name: "carol", isAdmin: true, password: "chosen-by-operator" }] } }),
      (err: Error) => {
        assert.match(err.message, /^users\[1\] \(carol\): is the name of a user created by signing in through provider upstream, who has no password/);
        assert.match(err.message, /Rename this entry, or rename or delete that user first/);
        return true;
      },
    );
    const server = await startTestServer({ database, config: { providers: [provider] } });
    try {
      const carol = (await server.store.users.findByName("carol"))!;
      assert.deepEqual([carol.isAdmin, carol.passwordHash], [false, null], "not adopted");
    } finally {
      await server.close();
    }
  });

  it("still updates a local user with a password, linked or not", async () => {
    const server = await startTestServer({ database, config: { providers: [provider], users: [{ name: "dave", password: "pw-dave-123", displayName: "Dave Local" }] } });
    try {
      assert.equal((await server.store.users.findByName("dave"))!.displayName, "Dave Local");
    } finally {
      await server.close();
    }
  });
});
