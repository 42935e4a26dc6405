import { randomInt } from "node:crypto";
import { sha256 } from "../secrets.js";

export const RECOVERY_CODE_COUNT = 10;
/** No 0/O, 1/I/L: codes are read off paper. */
const ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const LENGTH = 12;

/** Ten fresh codes as shown once, `XXXX-XXXX-XXXX` (about 59 random bits each). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    let code = "";
    for (let i = 0; i < LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
    return `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8)}`;
  });
}

/**
 * What is stored of a code: the SHA-256 of its normalised form (case, spaces
 * and dashes ignored). A fast hash is enough for random codes this long,
 * tried under the sign-in failure budget.
 */
export function recoveryCodeHash(code: string): string {
  return sha256(`recovery:${code.toUpperCase().replace(/[\s-]+/g, "")}`);
}

/** Whether text looks like a recovery code rather than a one-time code. */
export function looksLikeRecoveryCode(text: string): boolean {
  return text.replace(/[\s-]+/g, "").length === LENGTH;
}
