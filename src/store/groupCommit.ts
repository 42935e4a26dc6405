/**
 * Group commit: callers add items one at a time, and each write stores every
 * item that arrived while the previous write was running, in one statement
 * or transaction. At most one write is in flight. Each caller's promise
 * settles when the write holding its item has committed (or failed), so an
 * answer sent after it is as durable as one sent after a write of its own.
 *
 * Why: under load, one transaction per issued token costs a round trip to
 * the database (through the libuv pool, behind RSA signatures) for each of
 * BEGIN, INSERT and COMMIT, and on SQLite holds the only write connection
 * meanwhile.
 */
export class GroupCommit<T> {
  private pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly maxBatch = 100,
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      // Items added in the same turn of the event loop join the first write.
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      try {
        await this.write(batch.map((p) => p.item));
        for (const p of batch) p.resolve();
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err);
        // One bad item must not fail the others: write each on its own.
        else for (const p of batch) await this.write([p.item]).then(p.resolve, p.reject);
      }
    }
    this.writing = false;
  }
}
