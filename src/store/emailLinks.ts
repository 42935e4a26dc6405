import type { Db } from "./db.js";
import { endUserAccess } from "./revocations.js";

/** What a mailed link does. */
export type EmailLinkPurpose = "verify" | "reset";

/** A link mailed to a user, as stored: its token only as a hash. Times are epoch ms. */
export interface EmailLinkRecord {
  tokenHash: string;
  userId: string;
  purpose: EmailLinkPurpose;
  /** The address it was mailed to: a verification link verifies only that address. */
  email: string;
  /** The sign-in request to go on with after the click (JSON), if any. */
  continueRequest: string | null;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

interface Row {
  token_hash: string;
  user_id: string;
  purpose: string;
  email: string;
  continue_request: string | null;
  created_at: number | string;
  expires_at: number | string;
  used_at: number | string | null;
}

const fromRow = (r: Row): EmailLinkRecord => ({
  tokenHash: r.token_hash,
  userId: r.user_id,
  purpose: r.purpose as EmailLinkPurpose,
  email: r.email,
  continueRequest: r.continue_request,
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
  usedAt: r.used_at === null ? null : Number(r.used_at),
});

/** What taking a link came to: the link (now used), or why not. */
export type TakenLink = { ok: true; link: EmailLinkRecord } | { ok: false; reason: "used" | "expired" | "unknown" };

/**
 * The single-use links of email verification and password reset.
 *
 * The contract (test/store/contract/users.spec.ts, every backend, "email links"):
 * - one live link per user and purpose: issue() replaces the older one in
 *   one statement, which voids it ("a newer link voids the older one, ...");
 * - single-use: take() marks the link used in one conditional UPDATE, so of
 *   concurrent takers exactly one wins; a used, expired or unknown (voided)
 *   hash is refused with its reason and changes nothing ("lets exactly one
 *   of 20 concurrent takers have a link, ...");
 * - verifyEmail() and resetPassword() take the link and make the change in
 *   one transaction: verification only while the user's address is still
 *   the one the link was mailed to; a reset ends the user's sessions and
 *   refresh tokens with it, and verifies that address too ("verifies only the address it was mailed to",
 *   "resets the password and ends every sign-in, once");
 * - expired rows are swept by the cleanup job (store/cleanup.ts).
 */
export class EmailLinkRepository {
  constructor(private readonly db: Db) {}

  async issue(link: Omit<EmailLinkRecord, "usedAt">): Promise<void> {
    const row = {
      token_hash: link.tokenHash,
      user_id: link.userId,
      purpose: link.purpose,
      email: link.email,
      continue_request: link.continueRequest,
      created_at: link.createdAt,
      expires_at: link.expiresAt,
      used_at: null,
    };
    const { user_id: _u, purpose: _p, ...replaced } = row;
    await this.db("email_links").insert(row).onConflict(["user_id", "purpose"]).merge(replaced);
  }

  /** The link with this hash, for showing its form; undefined when unknown (or voided by a newer one). */
  async find(tokenHash: string, purpose: EmailLinkPurpose): Promise<EmailLinkRecord | undefined> {
    const row = await this.db<Row>("email_links").where({ token_hash: tokenHash, purpose }).first();
    return row && fromRow(row);
  }

  /** Mark the link used, if it is live: one conditional UPDATE (single use). */
  async take(tokenHash: string, purpose: EmailLinkPurpose, now: number, conn: Db = this.db): Promise<TakenLink> {
    const rows: Row[] = await conn("email_links")
      .where({ token_hash: tokenHash, purpose })
      .whereNull("used_at")
      .where("expires_at", ">", now)
      .update({ used_at: now })
      .returning(["token_hash", "user_id", "purpose", "email", "continue_request", "created_at", "expires_at", "used_at"]);
    if (rows[0]) return { ok: true, link: fromRow(rows[0]) };
    const row = await conn<Row>("email_links").where({ token_hash: tokenHash, purpose }).first();
    return { ok: false, reason: !row ? "unknown" : row.used_at !== null ? "used" : "expired" };
  }

  /**
   * Take a verification link and mark its user's email verified, in one
   * transaction; `verified` is false when the user's address has changed
   * since the link was mailed (the link is spent all the same).
   */
  async verifyEmail(tokenHash: string, now: number): Promise<TakenLink & { verified?: boolean }> {
    return this.db.transaction(async (trx) => {
      const taken = await this.take(tokenHash, "verify", now, trx);
      if (!taken.ok) return taken;
      const changed = await trx("users")
        .where({ id: taken.link.userId, email: taken.link.email })
        .update({ email_verified: true, updated_at: now });
      return { ...taken, verified: changed > 0 };
    });
  }

  /**
   * Take a reset link and set its user's password hash, ending the user's
   * sessions, refresh and access tokens and unredeemed codes, in one transaction.
   */
  async resetPassword(tokenHash: string, passwordHash: string, now: number): Promise<TakenLink> {
    return this.db.transaction(async (trx) => {
      const taken = await this.take(tokenHash, "reset", now, trx);
      if (!taken.ok) return taken;
      const changed = await trx("users").where({ id: taken.link.userId }).update({ password_hash: passwordHash, updated_at: now });
      if (changed === 0) return { ok: false, reason: "unknown" };
      // The link reached the mailbox it was sent to: that address is proven, as a verification link would.
      await trx("users").where({ id: taken.link.userId, email: taken.link.email }).update({ email_verified: true });
      await endUserAccess(trx, taken.link.userId, now, "password_changed");
      return taken;
    });
  }
}
