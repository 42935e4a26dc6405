/**
 * What a sign-in proved, as RFC 8176 Authentication Method Reference values:
 * `pwd` a password, `otp` a one-time code, `hwk`/`swk` a passkey's key
 * (hardware or software), `user` user verification, `fed` a federated
 * sign-in, and `mfa` when more than one factor was used. The `acr` is `mfa`
 * then, `pwd` otherwise (any single factor).
 */
export type Amr = readonly string[];

export const ACR_VALUES = ["pwd", "mfa"] as const;
export type Acr = (typeof ACR_VALUES)[number];

export const parseAmr = (stored: string | undefined | null): string[] => (stored ? stored.split(" ").filter(Boolean) : []);
export const storedAmr = (amr: Amr): string => [...new Set(amr)].join(" ");

export function acrOf(amr: Amr): Acr {
  return amr.includes("mfa") ? "mfa" : "pwd";
}

/** The first factor's values with a second factor's, and `mfa` (RFC 8176 §2). */
export function withSecondFactor(first: Amr, second: Amr): string[] {
  return [...new Set([...first, ...second, "mfa"])];
}

/** The values of a sign-in whose second factor was taken back (removed): the first factor only. */
export function withoutSecondFactor(amr: Amr): string[] {
  return amr.filter((v) => v === "pwd" || v === "fed");
}

/** What a passkey assertion tells of its key and its user (from @simplewebauthn/server's authenticationInfo). */
export interface PasskeyAssertion {
  userVerified: boolean;
  credentialDeviceType: "singleDevice" | "multiDevice";
  credentialBackedUp: boolean;
}

/**
 * A passkey's RFC 8176 values: `swk` for a key that may leave its device
 * (backup eligible, WebAuthn §6.1.3 BE flag: synced by a passkey provider, so
 * held in software somewhere), `hwk` for one bound to its authenticator;
 * `user` when the authenticator verified the user (UV flag).
 */
export function passkeyAmr(assertion: PasskeyAssertion): string[] {
  const synced = assertion.credentialDeviceType === "multiDevice" || assertion.credentialBackedUp;
  return [synced ? "swk" : "hwk", ...(assertion.userVerified ? ["user"] : [])];
}
