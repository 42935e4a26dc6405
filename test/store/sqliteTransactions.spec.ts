import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb, type Db } from "../../src/store/db.js";

/**
 * Two handles on one SQLite file stand for two processes (workers, or
 * instances on one machine). A transaction that reads, then writes, while
 * the other writes in between, must wait for the lock and succeed, not be
 * refused with SQLITE_BUSY (src/store/deadlines.ts, BEGIN IMMEDIATE).
 */
describe("SQLite transactions across processes", () => {
  let dir: string;
  let first: Db;
  let second: Db;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "identity-trx-"));
    first = await openDb({ url: join(dir, "shared.sqlite") });
    second = await openDb({ url: join(dir, "shared.sqlite") });
  });
  after(async () => {
    await Promise.all([first?.destroy(), second?.destroy()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const aUser = (name: string) => ({ id: `id-${name}`, name, display_name: name, email: "", email_verified: false, avatar: "", phone: "", address: "", is_admin: false, disabled: false, properties: "{}", created_at: 0, updated_at: 0 });

  it("lets a read-then-write transaction finish while another process writes in between; the other write waits, then lands", async () => {
    await first("users").insert(aUser("doomed"));
    let otherWrite: Promise<unknown> | undefined;
    let landedDuring = false;
    const deleted = await first.transaction(async (trx) => {
      const row = await trx("users").where({ name: "doomed" }).first("id");
      // The other process writes after this read and before this transaction's write: long enough to land, were it let.
      otherWrite = second("users").insert(aUser(`other-${Date.now()}`)).then(() => (landedDuring = true));
      await new Promise((resolve) => setTimeout(resolve, 500));
      return trx("users").where({ id: row.id }).delete();
    });
    assert.equal(deleted, 1);
    assert.equal(landedDuring, false, "the other write waited for this transaction's lock");
    await otherWrite;
    assert.equal(await first("users").where({ name: "doomed" }).first(), undefined);
    assert.equal((await second("users").where("name", "like", "other-%")).length, 1);
  });
});
