/** Injected time source, so tests move time instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function epochSeconds(clock: Clock): number {
  return Math.floor(clock.now() / 1000);
}
