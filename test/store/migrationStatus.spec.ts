import assert from "node:assert/strict";
import { connectDb, migrate, MIGRATIONS, migrationStatus, NewerDatabaseError, openDb, type Db } from "../../src/store/db.js";
import { migrations } from "../../src/store/migrations/index.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";

const FROM_A_NEWER_BUILD = "999_from_a_newer_build";

// A file or a server: :memory: would be a new database on every connection.
describeEachDatabase("migration status, and a database newer than this build", (ctx) => {
  let names: string[];
  let db: Db;

  before(async () => {
    names = (await migrations.getMigrations([])).map((m) => migrations.getMigrationName(m));
    db = await openDb({ url: ctx.url });
  });
  after(() => db?.destroy());

  it("names every migration of this build as applied once the database is opened", async () => {
    assert.deepEqual(await migrationStatus(db), { applied: names, pending: [], unknown: [] });
  });

  it("lists the migrations not run yet as pending, and migrate runs exactly those", async () => {
    await db.migrate.down(MIGRATIONS);
    await db.migrate.down(MIGRATIONS);
    assert.deepEqual(await migrationStatus(db), { applied: names.slice(0, -2), pending: names.slice(-2), unknown: [] });
    assert.deepEqual(await migrate(db), names.slice(-2));
    assert.deepEqual(await migrate(db), []);
    assert.deepEqual((await migrationStatus(db)).pending, []);
  });

  it("names a migration this build does not know, and refuses to open or migrate such a database", async () => {
    await db(MIGRATIONS.tableName).insert({ name: FROM_A_NEWER_BUILD, batch: 99, migration_time: new Date() });
    try {
      assert.deepEqual(await migrationStatus(db), { applied: [...names, FROM_A_NEWER_BUILD], pending: [], unknown: [FROM_A_NEWER_BUILD] });
      const newer = (err: unknown) =>
        err instanceof NewerDatabaseError && err.message.includes(FROM_A_NEWER_BUILD) && /newer than this build/.test(err.message);
      await assert.rejects(openDb({ url: ctx.url }), newer);
      const other = connectDb({ url: ctx.url });
      try {
        await assert.rejects(migrate(other), newer);
      } finally {
        await other.destroy();
      }
    } finally {
      await db(MIGRATIONS.tableName).where({ name: FROM_A_NEWER_BUILD }).delete();
    }
  });
}, BACKENDS.filter((backend) => backend.name !== "SQLite :memory:"));
