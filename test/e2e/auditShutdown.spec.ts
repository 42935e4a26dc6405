import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseSince, runEventsCommand } from "../../src/app/eventsCommand.js";
import type { RunningServer } from "../../src/app/server.js";
import { cleanEnv, ensureBuilt, runCli } from "../support/cli.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, CC_ONLY_APP, postForm, startTestServer, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

/** `identity events` as JSON objects. */
async function events(database: string, ...args: string[]): Promise<Record<string, any>[]> {
  const out = await runEventsCommand([...args, "--database", database], cleanEnv());
  return out.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as Record<string, any>);
}

const issue = (url: string, app: { clientId: string; clientSecret: string }, count: number) =>
  Promise.all(
    Array.from({ length: count }, async () => {
      const res = await postForm(`${url}${TOKEN_PATH}`, { grant_type: "client_credentials" }, { authorization: basicAuth(app.clientId, app.clientSecret) });
      assert.equal(res.status, 200);
    }),
  );

// A database that outlives its server: every backend but :memory:.
describeEachDatabase(
  "audit trail across a clean shutdown, read with identity events",
  (ctx) => {
    let server: RunningServer | undefined;
    const config = { applications: [TEST_APP, CC_ONLY_APP], users: [TEST_USER] };
    after(() => server?.close());

    it("loses no event on close: every token issued before it is listed after a restart", async () => {
      server = await startTestServer({ database: ctx.url, config });
      await issue(server.url, TEST_APP, 60);
      await issue(server.url, CC_ONLY_APP, 15);
      // No flush here: close() itself must write what is queued.
      await server.close();
      server = await startTestServer({ database: ctx.url, config });
      const issued = await server.domain.auditEvents({ event: "token_issued", pageSize: 1000 });
      assert.equal(issued.events.length, 75);
      await server.close();
      server = undefined;
    });

    it("identity events filters by --client, --type, --user, --since and --limit, newest first", async () => {
      const all = await events(ctx.url, "--limit", "1000");
      assert.ok(all.length >= 75);
      const times = all.map((e) => Date.parse(e.time));
      assert.deepEqual(times, [...times].sort((a, b) => b - a));
      for (const e of all) assert.ok(e.event && e.outcome && e.actor?.kind && e.actor.name !== undefined && e.id, JSON.stringify(e));

      // The application's tokens, and its creation from the config file at the first start, by the local operator.
      const cc = await events(ctx.url, "--client", CC_ONLY_APP.clientId, "--limit", "1000");
      assert.deepEqual(cc.map((e) => e.event), [...Array<string>(15).fill("token_issued"), "application_created"]);
      assert.ok(cc.slice(0, 15).every((e) => e.actor.kind === "client" && e.actor.name === CC_ONLY_APP.clientId && e.clientAddress === "127.0.0.1"));
      assert.deepEqual(cc[15]!.actor, { kind: "admin", id: "local", name: "local" });
      assert.equal((await events(ctx.url, "--client", TEST_APP.clientId, "--type", "token_issued", "--limit", "1000")).length, 60);
      assert.equal((await events(ctx.url, "--client", CC_ONLY_APP.clientId, "--limit", "4")).length, 4);
      // The config file's user was created at the first start, by the local operator.
      const alice = await events(ctx.url, "--user", TEST_USER.name);
      assert.deepEqual(alice.map((e) => [e.event, e.actor.name]), [["user_created", "local"]]);
      assert.equal((await events(ctx.url, "--type", "sign_in")).length, 0);
      assert.equal((await events(ctx.url, "--since", "1m", "--limit", "1000")).length, all.length);
      assert.equal((await events(ctx.url, "--since", new Date(Date.now() + 60_000).toISOString())).length, 0);
      await assert.rejects(events(ctx.url, "--since", "yesterday"), /--since: expected an ISO 8601 time/);
      await assert.rejects(events(ctx.url, "--limit", "0"), /--limit: expected a whole number/);
    });
  },
  BACKENDS.filter((b) => b.name !== "SQLite :memory:"),
);

describe("identity events --since", () => {
  it("reads a time ago or an ISO 8601 time", () => {
    const now = Date.UTC(2026, 10, 25, 12);
    assert.equal(parseSince("30m", now), now - 30 * 60_000);
    assert.equal(parseSince("7d", now), now - 7 * 86_400_000);
    assert.equal(parseSince("2026-11-25T10:00:00Z", now), Date.UTC(2026, 10, 25, 10));
    assert.throws(() => parseSince("12", now), /--since/);
  });
});

describe("audit trail of the built server on SIGTERM", () => {
  let dir: string;
  before(() => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), "identity-audit-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes every queued event before it exits", async () => {
    const database = join(dir, "db.sqlite");
    const config = writeConfigFile({ applications: [TEST_APP], users: [TEST_USER] });
    const served = runCli(["serve", "--port", "0", "--database", database, "--config", config], cleanEnv());
    try {
      const [, url] = await served.waitFor(/listening on (http:\/\/\S+)/);
      await issue(url!, TEST_APP, 100);
      served.child.kill("SIGTERM");
      assert.equal(await served.exited, 0);
    } finally {
      if (served.child.exitCode === null) served.child.kill("SIGKILL");
    }
    assert.equal((await events(database, "--type", "token_issued", "--limit", "1000")).length, 100);
    // Each event was logged too, on its token request's JSON line on standard error.
    const lines = served.stderr().split("\n").filter((line) => line.includes('"msg":"request"'));
    assert.equal(lines.filter((line) => JSON.parse(line).event === "token_issued").length, 100);
  });
});
