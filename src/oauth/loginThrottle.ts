import type { Clock } from "../clock.js";
import type { LoginFailureRepository } from "../store/loginFailures.js";
import { OAuthError } from "./errors.js";
import type { Metrics } from "./metrics.js";
import { sha256 } from "./secrets.js";

/** The brute-force policy: `maxFailures` failures within `lockoutSeconds` lock the name for `lockoutSeconds`. */
export interface LoginPolicy {
  /** 0 turns the policy off. */
  maxFailures: number;
  lockoutSeconds: number;
}

/** Five failures in five minutes lock a name for five minutes. */
export const DEFAULT_LOGIN_POLICY: LoginPolicy = { maxFailures: 5, lockoutSeconds: 300 };

/**
 * Counts failed sign-ins per user name, for the password grant and the login
 * form alike. Names that do not exist are counted and locked the same way,
 * so a lockout reveals nothing about which accounts exist.
 */
export class LoginThrottle {
  constructor(
    private readonly failures: LoginFailureRepository,
    private readonly clock: Clock,
    private readonly policy: LoginPolicy,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Run one sign-in check under the policy. While the name is locked the
   * check is not even run. Returns undefined when the check failed.
   */
  async attempt<T>(username: string, check: () => Promise<T | undefined>): Promise<T | undefined> {
    if (!this.enabled) return check();
    const key = keyOf(username);
    const record = await this.failures.find(key);
    if (record && record.lockedUntil > this.clock.now()) {
      throw new OAuthError("invalid_grant", "too many failed sign-in attempts; try again later");
    }
    const result = await check();
    if (result === undefined) await this.recordFailure(key);
    else if (record) await this.failures.clear(key);
    return result;
  }

  private async recordFailure(key: string): Promise<void> {
    const now = this.clock.now();
    // Forgetting old windows first means the count below is within this one.
    await this.failures.deleteStale(now - this.policy.lockoutSeconds * 1000, now);
    const count = await this.failures.recordFailure(key, now);
    if (count >= this.policy.maxFailures) {
      await this.failures.lock(key, now, now + this.policy.lockoutSeconds * 1000);
      this.metrics.lockout();
    }
  }

  private get enabled(): boolean {
    return this.policy.maxFailures > 0;
  }
}

// Hashed, so any string an attacker sends becomes a fixed-size key.
const keyOf = (username: string) => `user:${sha256(username)}`;
