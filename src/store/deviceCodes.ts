import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";

export type DeviceCodeStatus = "pending" | "approved" | "denied" | "issued";

/** One device authorization (RFC 8628 §3.2), as the store keeps it. */
export interface DeviceCodeRecord {
  /** SHA-256 of the device code. */
  deviceCodeHash: string;
  /** Normalised: 8 characters, no dash. */
  userCode: string;
  clientId: string;
  scope: string;
  status: DeviceCodeStatus;
  userId: string | null;
  /** Epoch seconds of the approving user's sign-in. */
  authTime: number | null;
  /** What the approving sign-in proved (RFC 8176 values, space-separated); absent before a decision. */
  amr?: string;
  intervalSeconds: number;
  lastPolledAt: number;
  createdAt: number;
  expiresAt: number;
}

/** What one poll found (RFC 8628 §3.5), decided by conditional statements. */
export type PollOutcome =
  | { kind: "unknown" }
  | { kind: "too_fast"; record: DeviceCodeRecord }
  | { kind: "polled"; record: DeviceCodeRecord }
  /** This poll turned the approved code into issued: it alone answers with tokens. */
  | { kind: "claimed"; record: DeviceCodeRecord };

interface Row {
  device_code_hash: string;
  user_code: string;
  client_id: string;
  scope: string;
  status: string;
  user_id: string | null;
  auth_time: number | string | null;
  amr?: string | null;
  interval_seconds: number;
  last_polled_at: number | string;
  created_at: number | string;
  expires_at: number | string;
}

const fromRow = (r: Row): DeviceCodeRecord => ({
  deviceCodeHash: r.device_code_hash,
  userCode: r.user_code,
  clientId: r.client_id,
  scope: r.scope,
  status: r.status as DeviceCodeStatus,
  userId: r.user_id,
  authTime: r.auth_time === null ? null : Number(r.auth_time),
  ...(r.amr ? { amr: r.amr } : {}),
  intervalSeconds: Number(r.interval_seconds),
  lastPolledAt: Number(r.last_polled_at),
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
});

/**
 * The contract (test/store/contract/authorization.spec.ts, every backend, "device codes"):
 * - unique: user code; an insert repeating one throws ConflictError;
 * - compare-and-set: decide() moves only a pending, unexpired code; poll()
 *   counts a poll only when the interval has passed since the last one
 *   (else it is too fast and the interval grows by 5 s, RFC 8628 §3.5), and
 *   of any number of concurrent polls of an approved code exactly one
 *   claims it ("gives an approved code to exactly one of 20 concurrent polls");
 * - expired rows are swept by the cleanup job.
 */
export class DeviceCodeRepository {
  constructor(private readonly db: Db) {}

  async insert(r: DeviceCodeRecord): Promise<void> {
    await guardUnique("device code", "user code", () =>
      this.db("device_codes").insert({
        device_code_hash: r.deviceCodeHash,
        user_code: r.userCode,
        client_id: r.clientId,
        scope: r.scope,
        status: r.status,
        user_id: r.userId,
        auth_time: r.authTime,
        interval_seconds: r.intervalSeconds,
        last_polled_at: r.lastPolledAt,
        created_at: r.createdAt,
        expires_at: r.expiresAt,
      }),
    );
  }

  /** The code a user typed, while it has not expired. */
  async findByUserCode(userCode: string, now: number): Promise<DeviceCodeRecord | undefined> {
    const row = await this.db<Row>("device_codes").where({ user_code: userCode }).where("expires_at", ">", now).first();
    return row && fromRow(row);
  }

  /** Approve (with the user and their sign-in time) or deny a pending, unexpired code; false when it was not pending. */
  async decide(userCode: string, decision: "approved" | "denied", userId: string, authTime: number, now: number, amr?: string): Promise<boolean> {
    const changed = await this.db("device_codes")
      .where({ user_code: userCode, status: "pending" })
      .where("expires_at", ">", now)
      .update({ status: decision, user_id: userId, auth_time: authTime, amr: amr ?? null });
    return changed === 1;
  }

  /**
   * One poll at `now` by `clientId` (another client's poll finds nothing). A poll within the interval of the last counted one is
   * too fast: the interval grows by 5 s for it and every later poll. A poll
   * in time is counted; if the code is approved, one conditional UPDATE to
   * issued decides which poll alone gets the tokens.
   */
  async poll(deviceCodeHash: string, clientId: string, now: number): Promise<PollOutcome> {
    const counted = await this.db("device_codes")
      .where({ device_code_hash: deviceCodeHash, client_id: clientId })
      .where("last_polled_at", "<=", this.db.raw("CAST(? AS BIGINT) - interval_seconds * 1000", [now]))
      .update({ last_polled_at: now });
    if (counted === 0) {
      const slowed = await this.db("device_codes")
        .where({ device_code_hash: deviceCodeHash, client_id: clientId })
        .update({ interval_seconds: this.db.raw("interval_seconds + 5") });
      const record = slowed === 0 ? undefined : await this.find(deviceCodeHash);
      return record ? { kind: "too_fast", record } : { kind: "unknown" };
    }
    const claimed = await this.db("device_codes").where({ device_code_hash: deviceCodeHash, status: "approved" }).update({ status: "issued" });
    const record = await this.find(deviceCodeHash);
    if (!record) return { kind: "unknown" };
    return { kind: claimed === 1 ? "claimed" : "polled", record };
  }

  private async find(deviceCodeHash: string): Promise<DeviceCodeRecord | undefined> {
    const row = await this.db<Row>("device_codes").where({ device_code_hash: deviceCodeHash }).first();
    return row && fromRow(row);
  }
}
