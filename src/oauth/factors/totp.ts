import { Secret, TOTP } from "otpauth";

/** RFC 6238 as authenticator apps read it: SHA-1, 6 digits, 30-second steps (§4, §5.2). */
const PARAMS = { algorithm: "SHA1", digits: 6, period: 30 } as const;
/** One step either way (RFC 6238 §5.2: the allowed transmission delay); two away is refused. */
const WINDOW = 1;

/** A new 160-bit secret (RFC 4226 §4 R6), in base32 as authenticator apps take it. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The `otpauth://` URI an authenticator app scans: issuer the service's host, account the user name. */
export function totpUri(secret: string, issuerHost: string, account: string): string {
  return new TOTP({ ...PARAMS, issuer: issuerHost, label: account, secret: Secret.fromBase32(secret) }).toString();
}

/**
 * The time step a code belongs to, within one step of `nowMs`, or undefined.
 * The caller accepts the step once (RFC 6238 §5.2).
 */
export function totpStep(secret: string, code: string, nowMs: number): number | undefined {
  const token = code.replace(/\s+/g, "");
  if (!/^\d{6}$/.test(token)) return undefined;
  const totp = new TOTP({ ...PARAMS, secret: Secret.fromBase32(secret) });
  const delta = totp.validate({ token, timestamp: nowMs, window: WINDOW });
  return delta === null ? undefined : totp.counter({ timestamp: nowMs }) + delta;
}

/** The code of `nowMs`'s step (tests, and nothing else, compute codes). */
export function totpCode(secret: string, nowMs: number): string {
  return new TOTP({ ...PARAMS, secret: Secret.fromBase32(secret) }).generate({ timestamp: nowMs });
}
