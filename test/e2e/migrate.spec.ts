import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS, openDb } from "../../src/store/db.js";
import { migrations } from "../../src/store/migrations/index.js";
import { runIdentity } from "../support/cliSource.js";

describe("identity migrate, and serve on a database newer than itself", function () {
  this.timeout(60_000);
  let dir: string;
  let names: string[];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "identity-migrate-"));
    names = (await migrations.getMigrations([])).map((m) => migrations.getMigrationName(m));
  });

  it("migrate --status lists applied and pending migrations; migrate runs the pending ones", async () => {
    const file = join(dir, "partial.sqlite");
    const db = await openDb({ url: file });
    await db.migrate.down(MIGRATIONS);
    await db.destroy();

    const status = await runIdentity(["migrate", "--status", "--database", file]);
    assert.equal(status.code, 0, status.stderr);
    const lines = status.stdout.trim().split("\n");
    assert.deepEqual(
      lines.slice(0, -1).map((line) => line.split(/\s{2,}/)),
      [...names.slice(0, -1).map((name) => [name, "applied"]), [names.at(-1), "pending"]],
    );
    assert.equal(lines.at(-1), `${names.length - 1} applied, 1 pending`);

    const run = await runIdentity(["migrate"], { DATABASE_URL: file });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`^ran ${names.at(-1)}$`, "m"));
    assert.match(run.stdout, new RegExp(`^${names.length} applied, 0 pending$`, "m"));
  });

  it("migrate --status refuses a SQLite file that does not exist rather than create it", async () => {
    const result = await runIdentity(["migrate", "--status", "--database", join(dir, "missing.sqlite")]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /no SQLite database at .*missing\.sqlite/);
  });

  it("serve exits non-zero, naming the unknown migration, on a database a newer build migrated", async () => {
    const file = join(dir, "newer.sqlite");
    const db = await openDb({ url: file });
    await db(MIGRATIONS.tableName).insert({ name: "999_from_a_newer_build", batch: 99, migration_time: new Date() });
    await db.destroy();

    const serve = await runIdentity(["serve", "--port", "0", "--database", file], {}, 30_000);
    assert.equal(serve.code, 1, `${serve.stdout}\n${serve.stderr}`);
    assert.doesNotMatch(serve.stdout, /listening on/);
    assert.match(
      serve.stderr,
      /^identity: (.*: )?the database is newer than this build: it has migrations this build does not know \(999_from_a_newer_build\)\. Run the version that migrated it, or restore a backup/m,
    );

    const status = await runIdentity(["migrate", "--status", "--database", file]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^999_from_a_newer_build\s+applied, unknown to this build$/m);
    assert.match(status.stdout, /1 unknown to this build: a newer version migrated this database, and this one will not start on it$/m);

    const migrate = await runIdentity(["migrate", "--database", file]);
    assert.equal(migrate.code, 1);
    assert.match(migrate.stderr, /newer than this build/);
  });
});
