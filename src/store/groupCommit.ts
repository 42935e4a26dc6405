import { DatabaseDeadlineError, isStoreUnavailable } from "./errors.js";

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
  private pending: Waiter<T>[] = [];
  private writing = false;

  /**
   * `deadlineMs`: a caller whose item is not committed this long after it
   * was added is refused with a DatabaseDeadlineError (503): taken out of
   * the queue if its write has not started, answered at once if it has
   * (that write may still commit it: never acknowledged, so nothing
   * acknowledged is lost). 0: no deadline.
   */
  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly maxBatch = 100,
    private readonly deadlineMs = 0,
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = { item, resolve, reject, settled: false };
      if (this.deadlineMs > 0) waiter.timer = setTimeout(() => this.expire(waiter), this.deadlineMs);
      this.pending.push(waiter);
      // Items added in the same turn of the event loop join the first write.
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private expire(waiter: Waiter<T>): void {
    const queued = this.pending.indexOf(waiter);
    if (queued >= 0) this.pending.splice(queued, 1);
    settle(waiter, new DatabaseDeadlineError(this.deadlineMs));
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      try {
        await this.write(batch.map((p) => p.item));
        for (const p of batch) settle(p);
      } catch (err) {
        // The database cannot serve: trying each item again would only make the callers wait longer.
        if (batch.length === 1 || isStoreUnavailable(err)) for (const p of batch) settle(p, err);
        // One bad item must not fail the others: write each on its own.
        else {
          for (const p of batch) {
            if (p.settled) continue;
            await this.write([p.item]).then(
              () => settle(p),
              (e: unknown) => settle(p, e),
            );
          }
        }
      }
    }
    this.writing = false;
  }
}

interface Waiter<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
  timer?: NodeJS.Timeout;
  settled: boolean;
}

function settle<T>(waiter: Waiter<T>, err?: unknown): void {
  if (waiter.settled) return;
  waiter.settled = true;
  clearTimeout(waiter.timer);
  if (err === undefined) waiter.resolve();
  else waiter.reject(err);
}
