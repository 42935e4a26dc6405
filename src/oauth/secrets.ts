import * as crypto from "node:crypto";
import { createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/** A random URL-safe string with `bytes` bytes of entropy (default 256 bits). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/** SHA-256 of a high-entropy value (token, code), as stored at rest. */
export const sha256: (value: string) => string =
  // The one-shot hash (Node 20.12+) makes no Hash object, whose weak handle
  // V8's young-generation collector would have to visit. It is looked up on
  // the namespace because a named import of it would not link on older Nodes.
  typeof crypto.hash === "function"
    ? (value) => crypto.hash("sha256", value, "base64url")
    : (value) => createHash("sha256").update(value).digest("base64url");

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  // timingSafeEqual needs equal lengths; comparing against itself keeps the
  // time independent of where the strings differ.
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

/** scrypt cost parameters (RFC 7914). Each hash records its own, so verifying follows the stored ones. */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/** N=2^15 costs ~50 ms and 32 MiB per hash. */
export const SCRYPT_COST: ScryptCost = { N: 32768, r: 8, p: 1 };
const MAXMEM = 64 * 1024 * 1024;
const KEY_LENGTH = 32;

function scryptAsync(secret: string, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  const params = { ...cost, maxmem: MAXMEM };
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEY_LENGTH, params, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Hash a password or client secret as `scrypt$N$r$p$salt$hash`. */
export async function hashSecret(secret: string, cost: ScryptCost = SCRYPT_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, cost);
  return ["scrypt", cost.N, cost.r, cost.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** Verify a secret against `hashSecret` output in constant time. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const key = await scryptAsync(secret, Buffer.from(salt, "base64url"), { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(key, Buffer.from(hash, "base64url"));
}

/** A hash to verify against when the account does not exist, so timing does not reveal it. */
export const DUMMY_SECRET_HASH =
  "scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
