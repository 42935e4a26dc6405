import type { Db } from "./db.js";

export interface LoginFailureRecord {
  key: string;
  failures: number;
  windowStartedAt: number;
  lockedUntil: number;
}

export class LoginFailureRepository {
  constructor(private readonly db: Db) {}

  async find(key: string): Promise<LoginFailureRecord | undefined> {
    const r = await this.db("login_failures").where({ key }).first();
    if (!r) return undefined;
    return {
      key: r.key,
      failures: Number(r.failures),
      windowStartedAt: Number(r.window_started_at),
      lockedUntil: Number(r.locked_until),
    };
  }

  /** Count one failure in one statement; returns the count. */
  async recordFailure(key: string, now: number): Promise<number> {
    await this.db("login_failures")
      .insert({ key, failures: 1, window_started_at: now, locked_until: 0 })
      .onConflict("key")
      .merge({ failures: this.db.raw("login_failures.failures + 1") });
    return (await this.find(key))?.failures ?? 1;
  }

  /** Lock the key until `until` and start counting afresh. */
  async lock(key: string, now: number, until: number): Promise<void> {
    await this.db("login_failures").where({ key }).update({ failures: 0, window_started_at: now, locked_until: until });
  }

  async clear(key: string): Promise<void> {
    await this.db("login_failures").where({ key }).delete();
  }

  /** Drop rows whose counting window began at or before `windowCutoff` and whose lock is over. */
  async deleteStale(windowCutoff: number, now: number): Promise<void> {
    await this.db("login_failures")
      .where("window_started_at", "<=", windowCutoff)
      .where("locked_until", "<=", now)
      .delete();
  }
}
