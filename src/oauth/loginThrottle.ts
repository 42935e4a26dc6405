import type { Clock } from "../shared/clock.js";
import { isStoreUnavailable } from "../store/errors.js";
import type { LoginFailureRepository } from "../store/loginFailures.js";
import { echo, OAuthError } from "./errors.js";
import { addressBudget, FailureBudgets, type Budget, type Taken } from "./failureBudget.js";
import { sha256 } from "./secrets.js";

/**
 * The brute-force policy: `maxFailures` failures of one user name, or
 * `maxFailuresPerAddress` from one client address, within `lockoutSeconds`
 * lock that name or address for `lockoutSeconds`. The window is fixed: it
 * opens with its first failure and closes `lockoutSeconds` later, and a
 * failure after it opens a new one. A failure is counted before its
 * password is checked, so, short of a successful sign-in, these are also
 * the most passwords checked for one name (or from one address) in a
 * window, however many attempts arrive at once.
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
  /** The user name (cut to 64 characters) or the client address (an IPv6 client's /64). */
  subject: string;
  until: number;
}

type Counter = Budget<Omit<Lockout, "until">>;

/** What a sign-in is refused with while its name or address is locked. */
export const LOGIN_LOCKED = "too many failed sign-in attempts; try again later";

/** One failure taken from a counter's budget before the check, and the count it made. */
type Reserved = Taken<Omit<Lockout, "until">>;

/**
 * Counts failed sign-ins per user name and per client address, for the
 * password grant and the login form, in the store, so every instance on one
 * database shares the counts. Each attempt first takes one failure from the
 * name's budget and from the address's (`FailureBudgets`), and only then is its password
 * checked: of any number of attempts at once, no more than the budget get
 * that far, and the one that spends it locks the name or address. A check
 * that fails leaves its failure counted; one that passes gives it back.
 *
 * Names that do not exist are counted and locked the same way, so a lockout
 * reveals nothing about which accounts exist. A success clears the name's
 * count but only gives back the address's one failure: one good account
 * must not buy an attacker fresh guesses at the others.
 */
export class LoginThrottle {
  /** Checks under way in this process, by counter key, and the attempts waiting for one to end. */
  private readonly underWay = new Map<string, { checks: number; waiters: Array<() => void> }>();
  private readonly budgets: FailureBudgets;

  constructor(
    private readonly failures: Pick<LoginFailureRepository, "reserveFailure" | "refundFailure" | "clear" | "deleteStale">,
    clock: Clock,
    private readonly policy: LoginPolicy,
    /** Told of every lockout as it begins (logs, metrics). */
    private readonly onLockout: (lockout: Lockout) => void = () => {},
  ) {
    this.budgets = new FailureBudgets(failures, clock, policy.lockoutSeconds);
  }

  /**
   * Run one sign-in check under the policy. While the name or the address
   * is locked the check is not run and the attempt is refused; while its
   * budget is taken by checks under way here, it waits for them (reserve).
   * Returns undefined when the check failed.
   */
  async attempt<T>(username: string, address: string | undefined, check: () => Promise<T | undefined>): Promise<T | undefined> {
    return this.attemptCounted(this.countersFor(username, address), check);
  }

  /**
   * A check only the address's budget rations, under the same rule as a
   * password: a user code typed at /device (RFC 8628 §5.1), which guesses
   * at codes rather than at a name's password.
   */
  async attemptFromAddress<T>(address: string | undefined, check: () => Promise<T | undefined>): Promise<T | undefined> {
    return this.attemptCounted(this.countersFor("", address).filter((c) => c.lockout.kind === "address"), check);
  }

  private async attemptCounted<T>(counters: Counter[], check: () => Promise<T | undefined>): Promise<T | undefined> {
    if (counters.length === 0) return check();
    const { reserved, now } = await this.reserve(counters);
    try {
      return await this.checkReserved(reserved, now, check);
    } finally {
      this.end(counters);
    }
  }

  /**
   * One failure from each budget, atomically in the store. A budget full of
   * checks still under way in this process is not yet a lock: a check that
   * passes gives its place back (lifting the lock its place began), so the
   * attempt waits for one of them to end and tries again. Only a budget spent
   * by failures, or by checks elsewhere, refuses at once.
   */
  private async reserve(counters: Counter[]): Promise<{ reserved: Reserved[]; now: number }> {
    // One more try when no check here could free a place (one may have been given back meanwhile).
    let lastTry = false;
    for (;;) {
      const now = this.budgets.now();
      // A refusal gives back what it took: nothing is checked, so nothing is counted against the other budget either.
      const { taken, refused } = await this.budgets.reserve(counters, now);
      if (taken) {
        this.begin(counters);
        return { reserved: taken, now };
      }
      const underWay = this.underWay.get(refused.key);
      if (underWay) {
        lastTry = false;
        await new Promise<void>((wake) => underWay.waiters.push(wake));
      } else if (lastTry) throw new OAuthError("invalid_grant", LOGIN_LOCKED);
      else lastTry = true;
    }
  }

  private begin(counters: Counter[]): void {
    for (const { key } of counters) {
      const entry = this.underWay.get(key) ?? { checks: 0, waiters: [] };
      entry.checks++;
      this.underWay.set(key, entry);
    }
  }

  /** A check that ends frees at most one place, so it wakes one waiter; the last wakes them all. */
  private end(counters: Counter[]): void {
    for (const { key } of counters) {
      const entry = this.underWay.get(key)!;
      entry.checks--;
      if (entry.checks > 0) {
        entry.waiters.shift()?.();
        continue;
      }
      this.underWay.delete(key);
      for (const wake of entry.waiters) wake();
    }
  }

  private async checkReserved<T>(reserved: Reserved[], now: number, check: () => Promise<T | undefined>): Promise<T | undefined> {
    let result: T | undefined;
    try {
      result = await check();
    } catch (err) {
      // A store that failed under the check weighed no password: its places go back, without
      // holding the answer (the store may still be down). Any other error keeps them: it buys no guess.
      if (isStoreUnavailable(err)) this.budgets.refund(reserved.map((r) => r.budget)).catch(() => {});
      throw err;
    }
    if (result === undefined) {
      for (const { budget, count } of reserved) {
        // The failure that spent the budget locked the key when it was taken; the lock now holds.
        if (count >= budget.max) this.onLockout({ ...budget.lockout, until: this.budgets.lockedUntil(now) });
      }
      // Housekeeping: windows that have ended count for nothing (reserveFailure restarts them anyway).
      await this.failures.deleteStale(now - this.budgets.windowMs, now);
    } else {
      for (const { budget } of reserved) {
        if (budget.lockout.kind === "user") await this.failures.clear(budget.key);
        else await this.budgets.refund([budget]);
      }
    }
    return result;
  }

  /** Forget a user name's failures and lift its lockout: its owner proved the mailbox (a password reset, issue 47 §3). */
  async clearName(username: string): Promise<void> {
    if (this.policy.maxFailures > 0) await this.failures.clear(`user:${sha256(username)}`);
  }

  /**
   * The address first: a locked address is refused before it touches the
   * name's count, so guesses from it cannot even briefly hold places in the
   * budget of the name they target.
   */
  private countersFor(username: string, address: string | undefined): Counter[] {
    const counters: Counter[] = [];
    const perAddress = this.policy.maxFailuresPerAddress ?? 0;
    if (perAddress > 0 && address) {
      counters.push(addressBudget("ip", address, perAddress));
    }
    // Hashed, so any string an attacker sends becomes a fixed-size key.
    if (this.policy.maxFailures > 0) {
      counters.push({ key: `user:${sha256(username)}`, max: this.policy.maxFailures, lockout: { kind: "user", subject: echo(username) } });
    }
    return counters;
  }
}
