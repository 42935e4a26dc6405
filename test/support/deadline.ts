import os from "node:os";

/**
 * How many times slower than an idle machine this one may run now: the
 * one-minute load average per core, at least 1 and at most 10.
 * TEST_SLOWDOWN (a number) sets it instead.
 */
export function loadFactor(): number {
  const forced = Number(process.env.TEST_SLOWDOWN);
  if (forced > 0) return forced;
  const perCore = os.loadavg()[0]! / Math.max(1, os.availableParallelism());
  return Math.min(10, Math.max(1, perCore));
}

/**
 * A deadline or bound of `ms` on an idle machine, scaled by the load now:
 * what a test waits for before it gives up, or allows an operation that
 * competes for the CPU. Never a pause: tests wait on events.
 */
export function scaledMs(ms: number): number {
  return Math.round(ms * loadFactor());
}

/**
 * Poll `check` until it returns something other than undefined or false,
 * for at most `boundMs` scaled by the load; then fail naming `what`.
 */
export async function eventually<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, boundMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + scaledMs(boundMs);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${scaledMs(boundMs)} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
