import net from "node:net";
import type { Clock } from "../shared/clock.js";
import type { LoginFailureRepository } from "../store/loginFailures.js";

/**
 * One failure budget: the store key it is counted under, how many failures
 * it holds per window, and what a lockout of it names (logs, audit).
 */
export interface Budget<Lockout> {
  key: string;
  max: number;
  lockout: Lockout;
}

/** One failure taken from a budget, and the count it made (`max` or more: it began the lock). */
export interface Taken<Lockout> {
  budget: Budget<Lockout>;
  count: number;
}

/** What `reserve` came to: every budget's failure taken, or the budget that refused (with nothing taken). */
export type Reservation<Lockout> = { taken: Taken<Lockout>[]; refused?: undefined } | { taken?: undefined; refused: Budget<Lockout> };

/**
 * The failure budgets that sign-in and client authentication share: a
 * fixed window of `lockoutSeconds` that opens with its first failure, and a
 * lock of the same length that begins with the failure spending the budget.
 * Every failure is taken in the store, one atomic statement per budget
 * (`LoginFailureRepository.reserveFailure`), before the check it pays for,
 * so every instance on one database shares the counts and concurrent checks
 * never outnumber a budget. The throttles decide what a refusal and a
 * success mean; this holds the arithmetic they share.
 */
export class FailureBudgets {
  constructor(
    private readonly failures: Pick<LoginFailureRepository, "reserveFailure" | "refundFailure">,
    private readonly clock: Clock,
    private readonly lockoutSeconds: number,
  ) {}

  /** The window of the counts, and the length of a lock. */
  get windowMs(): number {
    return this.lockoutSeconds * 1000;
  }

  now(): number {
    return this.clock.now();
  }

  /** When a lock that begins at `now` ends (epoch ms). */
  lockedUntil(now: number): number {
    return now + this.windowMs;
  }

  /**
   * One failure from each budget, in order. The first budget that is locked
   * refuses, and what was taken before it is given back: an attempt that is
   * not checked costs no budget anything.
   */
  async reserve<L>(budgets: readonly Budget<L>[], now: number): Promise<Reservation<L>> {
    const taken: Taken<L>[] = [];
    for (const budget of budgets) {
      const count = await this.failures.reserveFailure(budget.key, budget.max, now, this.windowMs);
      if (count === undefined) {
        await this.refund(taken.map((t) => t.budget));
        return { refused: budget };
      }
      taken.push({ budget, count });
    }
    return { taken };
  }

  /** Give one failure back to each budget (lifting a lock it began). */
  async refund<L>(budgets: readonly Budget<L>[]): Promise<void> {
    for (const budget of budgets) await this.failures.refundFailure(budget.key, budget.max);
  }
}

/**
 * The per-address budget of a client address, counted under `prefix`:
 * keyed and named by what the address counts as (`addressSubject`), so
 * every per-address limit treats a network alike.
 */
export function addressBudget(prefix: string, address: string, max: number): Budget<{ kind: "address"; subject: string }> {
  const subject = addressSubject(address);
  return { key: `${prefix}:${subject}`, max, lockout: { kind: "address", subject } };
}

/**
 * What the per-address budgets count a client address as. An IPv6 client
 * is its /64: one subscriber or host is routinely given a whole /64
 * (RFC 6177 §3, RFC 8273), so counted by full address it would bring a
 * fresh budget with every address it picks. An IPv4-mapped address
 * (RFC 4291 §2.5.5.2) is the IPv4 address it carries. Anything else
 * (IPv4, or no IP at all) is counted as written.
 */
export function addressSubject(address: string): string {
  const withoutZone = address.replace(/%.*$/, "");
  if (!net.isIPv6(withoutZone)) return address;
  const groups = ipv6Groups(withoutZone);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
  }
  // The first four groups, then "::": the canonical text of the prefix (RFC 5952 §4).
  const prefix = groups.slice(0, 4);
  while (prefix.length > 0 && prefix.at(-1) === 0) prefix.pop();
  return `${prefix.map((g) => g.toString(16)).join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, "::" and a dotted IPv4 tail expanded. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}
