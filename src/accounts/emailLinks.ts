import type { Clock } from "../shared/clock.js";
import type { UserRecord } from "../shared/model.js";
import type { EmailLinkPurpose, EmailLinkRecord, EmailLinkRepository, TakenLink } from "../store/emailLinks.js";
import { randomToken, sha256 } from "../oauth/secrets.js";

/** Where each kind of link lands, under the issuer. */
export const LINK_PATHS: Record<EmailLinkPurpose, string> = { verify: "/email/verify", reset: "/password/reset" };

/** 256 random bits, base64url: anything else is no token of ours and needs no lookup. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** Why a link does nothing, in words for its page. */
export const LINK_REFUSALS: Record<Exclude<TakenLink, { ok: true }>["reason"], string> = {
  used: "This link was already used. Each link works once.",
  expired: "This link has expired. Ask for a new one.",
  unknown: "This link is not valid: it was replaced by a newer one, or it was never issued. Use the newest mail, or ask for a new one.",
};

/**
 * The single-use links mailed for verification and reset: 256 random bits,
 * stored only as their SHA-256, valid for `ttlSeconds`, one live link per
 * user and purpose (a newer one voids the older). Links are made from the
 * configured issuer, never from a request's Host header.
 */
export class EmailLinks {
  constructor(
    private readonly repo: EmailLinkRepository,
    private readonly clock: Clock,
    private readonly issuer: string,
    readonly ttlSeconds: number,
  ) {}

  /** A new link for the user's current address; the older one of its purpose stops working. */
  async issue(user: UserRecord, purpose: EmailLinkPurpose, continueRequest?: string): Promise<string> {
    const token = randomToken(32);
    const now = this.clock.now();
    await this.repo.issue({
      tokenHash: sha256(token),
      userId: user.id,
      purpose,
      email: user.email,
      continueRequest: continueRequest ?? null,
      createdAt: now,
      expiresAt: now + this.ttlSeconds * 1000,
    });
    return `${this.issuer}${LINK_PATHS[purpose]}?token=${token}`;
  }

  /** The live link a token names, for showing its page; or why it does nothing. Nothing is changed. */
  async check(token: string | undefined, purpose: EmailLinkPurpose): Promise<TakenLink> {
    if (!token || !TOKEN.test(token)) return { ok: false, reason: "unknown" };
    const link = await this.repo.find(sha256(token), purpose);
    if (!link) return { ok: false, reason: "unknown" };
    if (link.usedAt !== null) return { ok: false, reason: "used" };
    if (link.expiresAt <= this.clock.now()) return { ok: false, reason: "expired" };
    return { ok: true, link };
  }

  /** Take a verification link: the user's email is verified if it is still the address mailed. */
  verifyEmail(token: string | undefined): Promise<TakenLink & { verified?: boolean }> {
    if (!token || !TOKEN.test(token)) return Promise.resolve({ ok: false, reason: "unknown" });
    return this.repo.verifyEmail(sha256(token), this.clock.now());
  }

  /** Take a reset link and set the new password hash, ending every sign-in of its user. */
  resetPassword(token: string | undefined, passwordHash: string): Promise<TakenLink> {
    if (!token || !TOKEN.test(token)) return Promise.resolve({ ok: false, reason: "unknown" });
    return this.repo.resetPassword(sha256(token), passwordHash, this.clock.now());
  }

  /** A page of ours under the issuer (the forgot-password page a mail points to). */
  url(path: string): string {
    return `${this.issuer}${path}`;
  }
}

export type { EmailLinkRecord };
