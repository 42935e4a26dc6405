import type { Clock } from "../shared/clock.js";
import type { LoginFailureRepository } from "../store/loginFailures.js";
import { echo, OAuthError } from "./errors.js";
import { addressBudget, FailureBudgets, type Budget as FailureBudget } from "./failureBudget.js";
import { sha256 } from "./secrets.js";

/**
 * The client-authentication policy: `maxFailures` failed authentications
 * naming one client_id, or `maxFailuresPerAddress` from one client address,
 * within `lockoutSeconds` lock that id or address for `lockoutSeconds`.
 */
export interface ClientAuthPolicy {
  /** 0 turns the per-client_id limit off. */
  maxFailures: number;
  /** 0 turns the per-address limit off. */
  maxFailuresPerAddress: number;
  lockoutSeconds: number;
}

/**
 * Ten failed scrypt checks naming a client_id, or twenty from an address,
 * in five minutes lock it for five minutes: at most ten guesses at a chosen
 * secret per window, and twenty scrypts' CPU per attacking address. A client
 * whose secret the service generated is never locked out (its secret is
 * checked for the cost of a SHA-256, lock or not), nor is one whose chosen
 * secret this process has verified before.
 */
export const DEFAULT_CLIENT_AUTH_POLICY: ClientAuthPolicy = { maxFailures: 10, maxFailuresPerAddress: 20, lockoutSeconds: 300 };

const KNOWN_LOCKED_MS = 1000;
const KNOWN_LOCKED_LIMIT = 10_000;

export const CLIENT_LOCKED = "too many failed client authentications; try again later";

/** A client lockout that just began: what is locked and until when (epoch ms). Never a secret. */
export interface ClientLockout {
  kind: "client" | "address";
  /** The client_id (cut to 64 characters) or the client address (an IPv6 client's /64). */
  subject: string;
  until: number;
}

type Budget = FailureBudget<Omit<ClientLockout, "until">>;

/** What `reserve` took: one failure of each budget, given back if the check passes. */
export interface ClientReservation {
  readonly budgets: readonly Budget[];
}

/**
 * Failure budgets of client authentication, per client_id and per client
 * address, kept in the store (so every instance shares them). A costly
 * check (an scrypt of a chosen secret) runs only after `reserve` has taken
 * one failure from each budget (`FailureBudgets`, as sign-ins do): however many
 * requests arrive at once, no more checks run than the budgets hold, and
 * the failure that spends a budget locks its id or address. A check that
 * passes gives its failure back.
 */
export class ClientThrottle {
  /**
   * Keys this process found locked, and until when it takes that for
   * granted (epoch ms): a flood at a locked id or address then costs no
   * database write per request. At most a second, as a success elsewhere
   * may lift a lock early.
   */
  private readonly knownLocked = new Map<string, number>();
  private readonly budgets: FailureBudgets;

  constructor(
    private readonly failures: Pick<LoginFailureRepository, "reserveFailure" | "refundFailure"> & Partial<Pick<LoginFailureRepository, "find">>,
    private readonly clock: Clock,
    private readonly policy: ClientAuthPolicy,
    /** Told of every lockout as it begins (logs, metrics). */
    private readonly onLockout: (lockout: ClientLockout) => void = () => {},
  ) {
    this.budgets = new FailureBudgets(failures, clock, policy.lockoutSeconds);
  }

  /**
   * Take one failure from each budget before a costly check. Refuses with
   * `invalid_client`, taking nothing, when a budget is spent.
   */
  async reserve(clientId: string, address: string | undefined): Promise<ClientReservation> {
    const budgets = this.budgetsFor(clientId, address);
    this.refuseIfKnownLocked(clientId, address);
    const now = this.budgets.now();
    const { taken, refused } = await this.budgets.reserve(budgets, now);
    if (refused) {
      this.remember(refused.key, now);
      throw new OAuthError("invalid_client", CLIENT_LOCKED);
    }
    for (const { budget, count } of taken) {
      // The lock began with this reservation; unless the check passes, it holds.
      if (count >= budget.max) {
        this.remember(budget.key, now);
        this.onLockout({ ...budget.lockout, until: this.budgets.lockedUntil(now) });
      }
    }
    return { budgets: taken.map((t) => t.budget) };
  }

  /** The check passed: give back what `reserve` took (lifting a lock it began). */
  async refund(reservation: ClientReservation): Promise<void> {
    for (const budget of reservation.budgets) this.knownLocked.delete(budget.key);
    await this.budgets.refund(reservation.budgets);
  }

  /**
   * Refuse when the id or the address is locked, as the store says now: a
   * check that costs little (a client assertion's signature) runs first and
   * counts a failure only when it fails (`countFailure`), so a lock must be
   * read rather than met by a reservation.
   */
  async refuseIfLocked(clientId: string, address: string | undefined): Promise<void> {
    this.refuseIfKnownLocked(clientId, address);
    if (!this.failures.find) return;
    const now = this.clock.now();
    const budgets = this.budgetsFor(clientId, address);
    const rows = await Promise.all(budgets.map((b) => this.failures.find!(b.key)));
    rows.forEach((row, i) => {
      if (row && row.lockedUntil > now) {
        this.remember(budgets[i]!.key, now);
        throw new OAuthError("invalid_client", CLIENT_LOCKED);
      }
    });
  }

  /** A failed check counted against both budgets, as a wrong secret is; the one that spends a budget locks it. */
  async countFailure(clientId: string, address: string | undefined): Promise<void> {
    try {
      await this.reserve(clientId, address);
    } catch (err) {
      // Already locked: nothing more to count.
      if (!(err instanceof OAuthError)) throw err;
    }
  }

  /** Refuse at once, asking nothing of the store, when this process saw the id or the address locked a moment ago. */
  refuseIfKnownLocked(clientId: string, address: string | undefined): void {
    if (this.knownLocked.size === 0) return;
    const now = this.budgets.now();
    for (const budget of this.budgetsFor(clientId, address)) {
      const until = this.knownLocked.get(budget.key);
      if (until === undefined) continue;
      if (until > now) throw new OAuthError("invalid_client", CLIENT_LOCKED);
      this.knownLocked.delete(budget.key);
    }
  }

  private remember(key: string, now: number): void {
    if (this.knownLocked.size >= KNOWN_LOCKED_LIMIT) this.knownLocked.clear();
    this.knownLocked.set(key, now + Math.min(KNOWN_LOCKED_MS, this.budgets.windowMs));
  }

  private budgetsFor(clientId: string, address: string | undefined): Budget[] {
    const budgets: Budget[] = [];
    // Hashed, so any string a caller sends becomes a fixed-size key.
    if (this.policy.maxFailures > 0) {
      budgets.push({ key: `client:${sha256(clientId)}`, max: this.policy.maxFailures, lockout: { kind: "client", subject: echo(clientId) } });
    }
    if (this.policy.maxFailuresPerAddress > 0 && address) {
      budgets.push(addressBudget("client-ip", address, this.policy.maxFailuresPerAddress));
    }
    return budgets;
  }
}
