import type { Clock } from "../shared/clock.js";
import type { LoginFailureRepository } from "../store/loginFailures.js";
import { echo, OAuthError } from "./errors.js";
import { sha256 } from "./secrets.js";

/**
 * The brute-force policy: `maxFailures` failures of one user name, or
 * `maxFailuresPerAddress` from one client address, within `lockoutSeconds`
 * lock that name or address for `lockoutSeconds`.
 */
export interface LoginPolicy {
  /** 0 turns the per-name limit off. */
  maxFailures: number;
  lockoutSeconds: number;
  /** 0 (or absent) turns the per-address limit off. */
  maxFailuresPerAddress?: number;
}

/** Five failures of a name, or twenty from an address, in five minutes lock it for five minutes. */
export const DEFAULT_LOGIN_POLICY: Required<LoginPolicy> = { maxFailures: 5, lockoutSeconds: 300, maxFailuresPerAddress: 20 };

/** A lockout that just began: what is locked and until when (epoch ms). Never a password. */
export interface Lockout {
  kind: "user" | "address";
  /** The user name (cut to 64 characters) or the client address. */
  subject: string;
  until: number;
}

interface Counter {
  key: string;
  max: number;
  lockout: Omit<Lockout, "until">;
}

/**
 * Counts failed sign-ins per user name and per client address, for the
 * password grant and the login form alike. Names that do not exist are
 * counted and locked the same way, so a lockout reveals nothing about which
 * accounts exist. A success clears the name's count but not the address's:
 * one good account must not buy an attacker fresh guesses at the others.
 */
export class LoginThrottle {
  constructor(
    private readonly failures: LoginFailureRepository,
    private readonly clock: Clock,
    private readonly policy: LoginPolicy,
    /** Told of every lockout as it begins (logs, metrics). */
    private readonly onLockout: (lockout: Lockout) => void = () => {},
  ) {}

  /**
   * Run one sign-in check under the policy. While the name or the address
   * is locked the check is not even run. Returns undefined when the check
   * failed.
   */
  async attempt<T>(username: string, address: string | undefined, check: () => Promise<T | undefined>): Promise<T | undefined> {
    const counters = this.countersFor(username, address);
    if (counters.length === 0) return check();
    const now = this.clock.now();
    const records = await Promise.all(counters.map((c) => this.failures.find(c.key)));
    if (records.some((r) => r && r.lockedUntil > now)) {
      throw new OAuthError("invalid_grant", "too many failed sign-in attempts; try again later");
    }
    const result = await check();
    if (result === undefined) {
      await this.recordFailure(counters);
    } else {
      const user = counters.findIndex((c) => c.lockout.kind === "user");
      if (user >= 0 && records[user]) await this.failures.clear(counters[user]!.key);
    }
    return result;
  }

  private countersFor(username: string, address: string | undefined): Counter[] {
    const counters: Counter[] = [];
    // Hashed, so any string an attacker sends becomes a fixed-size key.
    if (this.policy.maxFailures > 0) {
      counters.push({ key: `user:${sha256(username)}`, max: this.policy.maxFailures, lockout: { kind: "user", subject: echo(username) } });
    }
    const perAddress = this.policy.maxFailuresPerAddress ?? 0;
    if (perAddress > 0 && address) {
      counters.push({ key: `ip:${address}`, max: perAddress, lockout: { kind: "address", subject: address } });
    }
    return counters;
  }

  private async recordFailure(counters: Counter[]): Promise<void> {
    const now = this.clock.now();
    const until = now + this.policy.lockoutSeconds * 1000;
    // Forgetting old windows first means the counts below are within this one.
    await this.failures.deleteStale(now - this.policy.lockoutSeconds * 1000, now);
    for (const counter of counters) {
      const count = await this.failures.recordFailure(counter.key, now);
      if (count >= counter.max) {
        await this.failures.lock(counter.key, now, until);
        this.onLockout({ ...counter.lockout, until });
      }
    }
  }
}
