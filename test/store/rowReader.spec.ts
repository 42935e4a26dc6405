import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import sqlite3 from "sqlite3";
import { openSqliteConnection } from "../../src/store/db.js";
import { createRowReader, rowBy, type RowReader } from "../../src/store/rowReader.js";
import type { UserRow } from "../../src/store/users.js";
import { BACKENDS, describeEachBackend } from "../support/databases.js";

describeEachBackend("row reader", (ctx) => {
  let reads: RowReader;
  before(() => (reads = createRowReader(ctx.db)));
  after(() => reads.close());

  it("fails each lookup the database cannot answer, and the next lookups still work", async () => {
    const missingTable = rowBy("no_such_table", "id");
    const failed = await Promise.allSettled([reads.first(missingTable, "a"), reads.first(missingTable, "b"), reads.first(missingTable, "a")]);
    assert.deepEqual(failed.map((f) => f.status), ["rejected", "rejected", "rejected"]);
    assert.equal(await reads.first(rowBy("users", "id"), "nobody"), undefined);
  });
});

describeEachBackend(
  "row reader on a SQLite file",
  (ctx) => {
    const byId = rowBy("users", "id");
    const id = randomUUID();
    let reads: RowReader;
    before(async () => {
      reads = createRowReader(ctx.db);
      const now = Date.now();
      await ctx.store.users.insert({
        id, name: `user-${id}`, passwordHash: null, displayName: "Before", email: "", emailVerified: false, avatar: "",
        phone: "", address: "", isAdmin: false, disabled: false, properties: {}, createdAt: now, updatedAt: now,
      });
    });
    after(() => reads.close());

    const displayName = async () => (await reads.first<UserRow>(byId, id))?.display_name;

    it("answers with the row it read while nothing commits", async () => {
      await reads.first(byId, id); // opens the read connections, after which rows are kept
      const row = await reads.first<UserRow>(byId, id);
      assert.equal(await reads.first(byId, id), row, "the same row, not read again");
      assert.ok(Object.isFrozen(row), "a row shared by lookups cannot be changed by one of them");
    });

    it("reads again after a commit on the server's own connection", async () => {
      await displayName();
      await ctx.db("users").where({ id }).update({ display_name: "Renamed" });
      assert.equal(await displayName(), "Renamed");
    });

    it("reads again after a commit on a connection it does not know (another process's)", async () => {
      await displayName();
      const other = await openSqliteConnection(ctx.url, sqlite3.OPEN_READWRITE);
      try {
        await new Promise<void>((resolve, reject) =>
          other.run("UPDATE users SET display_name = 'Elsewhere' WHERE id = ?", [id], (err) => (err ? reject(err) : resolve())),
        );
      } finally {
        await new Promise((resolve) => other.close(resolve));
      }
      assert.equal(await displayName(), "Elsewhere");
    });
  },
  BACKENDS.filter((backend) => backend.name === "SQLite file"),
);
