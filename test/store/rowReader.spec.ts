import assert from "node:assert/strict";
import { createRowReader, rowBy, type RowReader } from "../../src/store/rowReader.js";
import { describeEachBackend } from "../support/databases.js";

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
