import assert from "node:assert/strict";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { FieldViolationSchema } from "../../gen/identity/v1/admin_pb.js";
import { SettingsAdminService } from "../../gen/identity/v1/settings_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { consoleAuthorization } from "../support/consoleSignIn.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../support/server.js";

const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
// Instances behind one load balancer announce one issuer, so the console's one redirect URI is the same for all.
const ISSUER = "http://identity.test";
const OTHER = { ...TEST_PROVIDER, name: "other", displayName: "Other" };
const CONFIG = { applications: [TEST_APP], users: [TEST_USER], providers: [TEST_PROVIDER, OTHER] };

const settingsOf = (server: RunningServer): Client<typeof SettingsAdminService> =>
  createClient(SettingsAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));

/** The provider buttons on the console's sign-in page of `server`, by provider name. */
async function consoleButtons(server: RunningServer): Promise<string[]> {
  const page = await browse(consoleAuthorization(server).url, new CookieJar());
  assert.equal(page.status, 200);
  return [...(await page.text()).matchAll(/\/login\/oauth\/provider\/([\w.-]+)/g)].map((m) => m[1]!);
}

async function refused(promise: Promise<unknown>): Promise<ConnectError> {
  return promise.then(
    () => assert.fail("the call must be refused"),
    (err: unknown) => ConnectError.from(err),
  );
}

/**
 * The console's sign-in providers as a stored setting (SettingsAdminService,
 * the config file's consoleProviders): a change counts at the next sign-in
 * on every instance sharing the database, without a restart;
 * --console-providers overrides it on its own instance.
 */
describeEachDatabase(
  "the console's sign-in providers, changed while running",
  (db) => {
    let first: RunningServer;
    let second: RunningServer;

    before(async () => {
      first = await startTestServer({ database: db.url, config: CONFIG, overrides: { issuer: ISSUER } });
      second = await startTestServer({ database: db.url, config: CONFIG, overrides: { issuer: ISSUER } });
    });
    after(async () => {
      await first?.close();
      await second?.close();
    });

    it("offers what an admin stores at the next sign-in on every instance, none restarted", async () => {
      assert.deepEqual(await consoleButtons(first), []);
      // The other instance has just read the console's application: a cached copy would now be stale.
      assert.deepEqual(await consoleButtons(second), []);
      const saved = await settingsOf(first).updateSettings({ settings: { consoleProviders: ["other", TEST_PROVIDER.name] } }, admin);
      assert.deepEqual(saved.settings?.consoleProviders, ["other", TEST_PROVIDER.name]);
      assert.deepEqual(saved.overridden, []);
      assert.deepEqual(await consoleButtons(second), ["other", TEST_PROVIDER.name], "the other instance, at once");
      assert.deepEqual(await consoleButtons(first), ["other", TEST_PROVIDER.name]);
      assert.deepEqual((await settingsOf(second).getSettings({}, admin)).effective?.consoleProviders, ["other", TEST_PROVIDER.name]);

      // Taken away again: the button is gone, and pressing it on a page drawn before starts no sign-in.
      const jar = new CookieJar();
      const drawn = await browse(consoleAuthorization(second).url, jar);
      await settingsOf(first).updateSettings({ settings: { consoleProviders: [TEST_PROVIDER.name] } }, admin);
      assert.deepEqual(await consoleButtons(second), [TEST_PROVIDER.name]);
      const pressed = await submit(`${second.url}/login/oauth/provider/other`, loginFormFields(await drawn.text()), jar);
      assert.equal(pressed.status, 404, "a provider no longer offered starts no sign-in");
    });

    it("keeps the stored list when an instance starts again, unless its config file names one", async () => {
      await settingsOf(first).updateSettings({ settings: { consoleProviders: ["other"] } }, admin);
      const third = await startTestServer({ database: db.url, config: CONFIG, overrides: { issuer: ISSUER } });
      try {
        assert.deepEqual(await consoleButtons(third), ["other"]);
      } finally {
        await third.close();
      }
      const fourth = await startTestServer({ database: db.url, config: { ...CONFIG, consoleProviders: [TEST_PROVIDER.name] }, overrides: { issuer: ISSUER } });
      try {
        assert.deepEqual(await consoleButtons(first), [TEST_PROVIDER.name], "the config file's list is stored at its start");
      } finally {
        await fourth.close();
      }
    });

    it("refuses a name that is no provider with a field error, and stores nothing", async () => {
      const before = (await settingsOf(first).getSettings({}, admin)).settings?.consoleProviders;
      const err = await refused(settingsOf(first).updateSettings({ settings: { consoleProviders: [TEST_PROVIDER.name, "missing", "gone"] } }, admin));
      assert.equal(err.code, Code.InvalidArgument);
      assert.deepEqual(
        err.findDetails(FieldViolationSchema).map((v) => [v.field, v.description]),
        [["consoleProviders", '"missing", "gone" are not login providers']],
      );
      const bad = await refused(settingsOf(first).updateSettings({ settings: { consoleProviders: ["has space"] } }, admin));
      assert.deepEqual(bad.findDetails(FieldViolationSchema).map((v) => v.field), ["consoleProviders"]);
      const unknownField = await refused(settingsOf(first).updateSettings({ settings: {}, updateFields: ["theme"] }, admin));
      assert.deepEqual(unknownField.findDetails(FieldViolationSchema).map((v) => v.field), ["updateFields"]);
      assert.deepEqual((await settingsOf(second).getSettings({}, admin)).settings?.consoleProviders, before);
    });

    it("lets --console-providers win on its own instance, says so, and still stores a change for the others", async () => {
      await settingsOf(first).updateSettings({ settings: { consoleProviders: [TEST_PROVIDER.name] } }, admin);
      const pinned = await startTestServer({ database: db.url, config: CONFIG, overrides: { issuer: ISSUER, consoleProviders: ["other"] } });
      try {
        const seen = await settingsOf(pinned).getSettings({}, admin);
        assert.deepEqual(seen.settings?.consoleProviders, [TEST_PROVIDER.name], "the stored list, untouched by the flag");
        assert.deepEqual(seen.effective?.consoleProviders, ["other"]);
        assert.deepEqual(seen.overridden, ["consoleProviders"]);
        assert.deepEqual(await consoleButtons(pinned), ["other"]);
        assert.deepEqual(await consoleButtons(first), [TEST_PROVIDER.name]);

        const changed = await settingsOf(pinned).updateSettings({ settings: { consoleProviders: [] } }, admin);
        assert.deepEqual(changed.settings?.consoleProviders, []);
        assert.deepEqual(changed.effective?.consoleProviders, ["other"]);
        assert.deepEqual(await consoleButtons(pinned), ["other"], "the flag still wins here");
        assert.deepEqual(await consoleButtons(first), [], "the stored change counts elsewhere");
      } finally {
        await pinned.close();
      }
    });
  },
  // Two instances need a database they can share.
  BACKENDS.filter((b) => b.name !== "SQLite :memory:"),
);

describe("consoleProviders in the config file", () => {
  it("refuses at start a name that is no provider, naming the field", async () => {
    await assert.rejects(
      startTestServer({ config: { ...CONFIG, consoleProviders: [TEST_PROVIDER.name, "typo"] } }),
      /consoleProviders: "typo" is not a login provider/,
    );
    await assert.rejects(startTestServer({ config: { ...CONFIG, consoleProviders: "acme" } }), /consoleProviders: must be a list of strings/);
  });
});
