import assert from "node:assert/strict";
import { DatabaseDeadlineError, isStoreUnavailable } from "../../src/store/errors.js";
import { GroupCommit } from "../../src/store/groupCommit.js";
import { scaledMs } from "../support/deadline.js";

describe("group commit", () => {
  it("writes what arrives during a write in the next one, one write at a time", async () => {
    const writes: number[][] = [];
    let inFlight = 0;
    let release: () => void = () => {};
    const group = new GroupCommit<number>(async (items) => {
      inFlight++;
      assert.equal(inFlight, 1, "two writes overlapped");
      writes.push(items);
      if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve));
      inFlight--;
    });
    const first = [group.add(1), group.add(2)];
    await new Promise((resolve) => setImmediate(resolve));
    const second = [group.add(3), group.add(4), group.add(5)];
    release();
    await Promise.all([...first, ...second]);
    assert.deepEqual(writes, [[1, 2], [3, 4, 5]]);
  });

  it("keeps batches within the limit", async () => {
    const sizes: number[] = [];
    const group = new GroupCommit<number>(async (items) => void sizes.push(items.length), 3);
    await Promise.all(Array.from({ length: 7 }, (_, i) => group.add(i)));
    assert.deepEqual(sizes, [3, 3, 1]);
  });

  it("fails only the item that cannot be written, not the rest of its batch", async () => {
    const written: number[] = [];
    const group = new GroupCommit<number>(async (items) => {
      if (items.includes(13)) throw new Error("bad row 13");
      written.push(...items);
    });
    const results = await Promise.allSettled([1, 13, 2].map((n) => group.add(n)));
    assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
    assert.match(String((results[1] as PromiseRejectedResult).reason), /bad row 13/);
    assert.deepEqual(written.sort(), [1, 2]);
  });

  it("answers every caller by its deadline, and never writes an item whose deadline passed in the queue", async () => {
    const writes: number[][] = [];
    let release: () => void = () => {};
    const group = new GroupCommit<number>(
      async (items) => {
        writes.push(items);
        // The first write hangs, as on a silent network, until the test lets it go.
        if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
      100,
      200,
    );
    const started = performance.now();
    const first = group.add(1);
    await new Promise((resolve) => setImmediate(resolve));
    const queued = group.add(2);
    const results = await Promise.allSettled([first, queued]);
    const elapsed = performance.now() - started;
    for (const r of results) {
      assert.equal(r.status, "rejected");
      assert.ok((r as PromiseRejectedResult).reason instanceof DatabaseDeadlineError);
      assert.equal(isStoreUnavailable((r as PromiseRejectedResult).reason), true);
    }
    // The deadline (200 ms), and what a loaded machine adds to seeing it.
    assert.ok(elapsed < 200 + scaledMs(200), `answered after ${Math.round(elapsed)} ms`);
    release();
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(writes, [[1]], "the item that expired in the queue was written");
    // Later items are written as before.
    await group.add(3);
    assert.deepEqual(writes, [[1], [3]]);
  });

  it("does not write item by item when the database is unavailable", async () => {
    let writes = 0;
    const group = new GroupCommit<number>(async () => {
      writes++;
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    });
    const results = await Promise.allSettled([1, 2, 3].map((n) => group.add(n)));
    assert.deepEqual(results.map((r) => r.status), ["rejected", "rejected", "rejected"]);
    assert.equal(writes, 1);
  });
});
