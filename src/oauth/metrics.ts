/**
 * Domain events operators count. The domain calls these; the composition
 * root decides what they feed (Prometheus in src/ops/metrics.ts, nothing in
 * tests). Labels must come from bounded sets: grant types, provider names.
 */
export interface Metrics {
  /** A token response was issued by this grant type. */
  tokensIssued(grantType: string): void;
  /** A token was introspected and found active or not. */
  introspected(active: boolean): void;
  /** A refresh token was presented again after it was used. */
  refreshReuse(): void;
  /** A token family was revoked as a whole (reuse detection, code replay). */
  familyRevoked(): void;
  /** A user sign-in failed (wrong password, unknown or disabled user). */
  loginFailure(): void;
  /** An account was locked after repeated failures. */
  lockout(): void;
  /** A user's password was checked against its hash (an scrypt), known user or not: what the lockout rations. */
  passwordChecked(): void;
  /** A call to a federation provider finished with this outcome (e.g. "ok", "error", "timeout"). */
  upstreamCall(provider: string, outcome: string): void;
}

const nothing = () => {};

export const noMetrics: Metrics = {
  tokensIssued: nothing,
  introspected: nothing,
  refreshReuse: nothing,
  familyRevoked: nothing,
  loginFailure: nothing,
  lockout: nothing,
  passwordChecked: nothing,
  upstreamCall: nothing,
};
