import assert from "node:assert/strict";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import { OAuthError } from "../../src/oauth/errors.js";
import type { RunningServer } from "../../src/app/server.js";
import { freshSharedTestDatabase, type FreshDatabase } from "../support/databases.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
const PRIVATE = "https://10.0.0.7/backchannel-logout";

describe("saving a backchannelLogoutUri: config file, RPC, CLI flags", function () {
  this.timeout(60_000);

  it("refuses a config file's private address without the leave, naming backchannelLogoutUri, and takes it with", async () => {
    await assert.rejects(
      startTestServer({ config: { applications: [{ ...TEST_APP, backchannelLogoutUri: PRIVATE }], users: [TEST_USER] } }),
      /backchannelLogoutUri: targets a private or link-local address/,
    );
    const server = await startTestServer({ config: { applications: [{ ...TEST_APP, backchannelLogoutUri: PRIVATE, allowPrivateBackchannelLogoutUri: true }], users: [TEST_USER] } });
    try {
      assert.equal((await server.domain.applicationAdmin.get(TEST_APP.name)).backchannelLogoutUri, PRIVATE);
    } finally {
      await server.close();
    }
  });

  describe("over RPC and the CLI", () => {
    let server: RunningServer;
    let database: FreshDatabase;
    before(async () => {
      database = freshSharedTestDatabase();
      server = await startTestServer({ database: database.url });
    });
    after(async () => {
      await server?.close();
      await database?.dispose();
    });

    it("refuses by RPC, naming the field, and keeps the leave an update does not change", async () => {
      const apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
      const refused = await apps.createApplication({ application: { name: "rp-private", backchannelLogoutUri: PRIVATE } }, admin).catch((err: unknown) => err);
      assert.ok(refused instanceof ConnectError);
      assert.match(refused.rawMessage, /backchannelLogoutUri: targets a private or link-local address/);
      const insecure = await apps.createApplication({ application: { name: "rp-http", backchannelLogoutUri: "http://rp.example/bc" } }, admin).catch((err: unknown) => err);
      assert.match((insecure as ConnectError).rawMessage, /backchannelLogoutUri: must use https/);

      const created = await apps.createApplication(
        { application: { name: "rp-ok", backchannelLogoutUri: PRIVATE, allowPrivateBackchannelLogoutUri: true, backchannelLogoutSessionRequired: true } },
        admin,
      );
      assert.equal(created.application?.backchannelLogoutUri, PRIVATE);
      assert.equal(created.application?.backchannelLogoutSessionRequired, true);
      const withdrawn = await apps.updateApplication({ application: { name: "rp-ok", allowPrivateBackchannelLogoutUri: false } }, admin).catch((err: unknown) => err);
      assert.match((withdrawn as ConnectError).rawMessage, /backchannelLogoutUri/, "the leave goes only with the URI");
      const cleared = await apps.updateApplication({ application: { name: "rp-ok", backchannelLogoutUri: "", allowPrivateBackchannelLogoutUri: false } }, admin);
      assert.equal(cleared.application?.backchannelLogoutUri, "");
    });

    it("refuses by CLI flags, naming the field, and takes --allow-private-backchannel-logout-uri", async () => {
      const cli = (...args: string[]) => runAdminCommand("app", [...args, "--database", database.url], {});
      await assert.rejects(cli("create", "--name", "cli-rp", "--backchannel-logout-uri", PRIVATE), (err: unknown) => err instanceof OAuthError && /backchannelLogoutUri/.test(err.description));
      const created = JSON.parse(await cli("create", "--name", "cli-rp", "--backchannel-logout-uri", PRIVATE, "--allow-private-backchannel-logout-uri", "--backchannel-logout-session-required"));
      assert.equal(created.backchannelLogoutUri, PRIVATE);
      assert.equal(created.allowPrivateBackchannelLogoutUri, true);
      assert.equal(created.backchannelLogoutSessionRequired, true);
    });
  });
});
