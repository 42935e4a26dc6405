import type { Clock } from "../../src/shared/clock.js";

/** A clock tests move by hand, so expiry is tested without sleeping. */
export class FakeClock implements Clock {
  constructor(private ms = Date.now()) {}

  now(): number {
    return this.ms;
  }

  advanceSeconds(seconds: number): void {
    this.ms += seconds * 1000;
  }
}
