import { createHmac } from "node:crypto";
import type { Clock } from "../shared/clock.js";
import { constantTimeEqual } from "./secrets.js";

/** How long one nonce is made for; a nonce holds for its window and the next (RFC 9449 §8). */
export const DPOP_NONCE_WINDOW_SECONDS = 60;
const MAC_BYTES = 16;

/**
 * Server nonces for DPoP proofs (RFC 9449 §8), kept nowhere: a nonce is its
 * time window and an HMAC of it under a secret every instance shares (one
 * row in the store), so any instance checks what any other made. A nonce
 * holds in its window and the next, and the window beyond (an instance whose
 * clock runs a little ahead), so a client always has a minute to use one.
 */
export class DPoPNonces {
  private cached: { window: number; nonce: string } | undefined;

  constructor(
    private readonly secret: string,
    private readonly clock: Clock,
  ) {}

  /** The nonce of the current window. */
  current(): string {
    const window = this.windowAt(this.clock.now());
    if (this.cached?.window !== window) this.cached = { window, nonce: this.make(window) };
    return this.cached.nonce;
  }

  /** Whether `nonce` is one of ours, of the current window, the one before, or the one after. */
  isFresh(nonce: string): boolean {
    const match = /^([0-9a-z]{1,12})\.[A-Za-z0-9_-]{22}$/.exec(nonce);
    if (!match) return false;
    const window = parseInt(match[1]!, 36);
    const now = this.windowAt(this.clock.now());
    return Math.abs(window - now) <= 1 && constantTimeEqual(nonce, this.make(window));
  }

  private windowAt(ms: number): number {
    return Math.floor(ms / (DPOP_NONCE_WINDOW_SECONDS * 1000));
  }

  private make(window: number): string {
    const mac = createHmac("sha256", this.secret).update(`dpop-nonce ${window}`).digest().subarray(0, MAC_BYTES);
    return `${window.toString(36)}.${mac.toString("base64url")}`;
  }
}
