import assert from "node:assert/strict";
import { LOOKUP_PATHS, indexLeadingColumns } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: indexes", (ctx) => {
  it("has an index led by every lookup column", async () => {
    const indexed = await indexLeadingColumns(ctx.db);
    const missing = Object.entries(LOOKUP_PATHS).flatMap(([table, columns]) => columns.map((c) => `${table}.${c}`)).filter((c) => !indexed.has(c));
    assert.deepEqual(missing, []);
  });
});
