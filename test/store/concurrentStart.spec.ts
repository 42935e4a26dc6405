import assert from "node:assert/strict";
import { migrations } from "../../src/store/migrations/index.js";
import { openDb, type Db } from "../../src/store/db.js";
import type { RunningServer } from "../../src/app/server.js";
import { describePostgres, freshPostgresSchema, type PostgresSchema } from "../support/databases.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

// Several instances starting at the same moment on one empty PostgreSQL schema.
describePostgres("instances starting together on one PostgreSQL schema", () => {
  let schema: PostgresSchema;
  beforeEach(() => (schema = freshPostgresSchema()));
  afterEach(() => schema.drop());

  it("migrates the schema exactly once when 4 instances open it concurrently", async () => {
    const opened = await Promise.allSettled(Array.from({ length: 4 }, () => openDb({ url: schema.url })));
    const dbs = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    try {
      assert.deepEqual(opened.map((r) => r.status), ["fulfilled", "fulfilled", "fulfilled", "fulfilled"], String(opened.find((r) => r.status === "rejected")?.reason));
      const db = dbs[0] as Db;
      const expected = (await migrations.getMigrations([])).map((m) => migrations.getMigrationName(m));
      const ran = await db("knex_migrations").select("name", "batch").orderBy("id");
      assert.deepEqual(ran.map((r) => r.name), expected, "each migration recorded once");
      assert.deepEqual(new Set(ran.map((r) => r.batch)), new Set([1]), "one instance ran them all, in one batch");
      const [lock] = await db("knex_migrations_lock").select("is_locked");
      assert.equal(lock.is_locked, 0);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
    }
  });

  it("provisions the first signing key and the config file once when 3 servers start concurrently", async () => {
    const started = await Promise.allSettled(Array.from({ length: 3 }, () => startTestServer({ database: schema.url })));
    const servers = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : [])) as RunningServer[];
    try {
      assert.equal(servers.length, 3, String(started.find((r) => r.status === "rejected")?.reason));
      const store = servers[0]!.store;
      assert.equal((await store.signingKeys.list()).length, 1);
      // The console's own client is provisioned at start too, once like the rest.
      assert.deepEqual((await store.applications.list()).map((a) => a.clientId).sort(), [TEST_APP.clientId, "identity-console"].sort());
      assert.deepEqual((await store.users.list()).map((u) => u.name), [TEST_USER.name]);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });
});
