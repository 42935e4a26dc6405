import { randomBytes, randomUUID } from "node:crypto";
import type { AccessTokenRecord } from "../../src/store/tokens.js";

// Epoch milliseconds beyond 2^32, so a column that truncated to 32 bits would show.
export const T0 = 1_750_000_000_000;
export const HOUR = 3_600_000;

export const hash = () => randomBytes(32).toString("hex");

export const anAccessToken = (over: Partial<AccessTokenRecord> = {}): AccessTokenRecord => ({
  tokenHash: hash(),
  jti: randomUUID(),
  familyId: randomUUID(),
  clientId: "client",
  userId: randomUUID(),
  scope: "openid profile",
  issuedAt: T0,
  expiresAt: T0 + HOUR,
  kid: null,
  revokedAt: null,
  ...over,
});
