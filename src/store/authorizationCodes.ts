import type { Db } from "./db.js";
import { loadedResources, storedResources } from "./tokens.js";

/** An issued authorization code, stored by the SHA-256 of its value. */
export interface AuthorizationCodeRecord {
  codeHash: string;
  /** The token family every token minted from this code joins. */
  familyId: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  scope: string;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  /** Epoch seconds of the user's authentication. */
  authTime: number;
  /** The authorize request's `claims` parameter as JSON (OIDC Core §5.5), if any. */
  claims: string | null;
  /** What the user's sign-in proved (RFC 8176 `amr` values, space-separated). */
  amr?: string;
  /** The resource URIs (RFC 8707) the authorize request named; absent for none. */
  resources?: string[];
  /** RFC 9449 §10: the thumbprint of the key the authorize request's dpop_jkt bound the code to. */
  dpopJkt?: string;
  /** The browser session it was issued from (its `sid`), which the ID token names; absent for none. */
  sid?: string;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
  replayedAt: number | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * The contract (test/store/contract/authorization.spec.ts, every backend, "authorization codes"):
 * - compare-and-set: consume() is one conditional UPDATE; of any number of
 *   concurrent callers exactly one gets true, and none after it ("lets
 *   exactly one of 50 concurrent consumes of one code win, and none after it");
 * - markReplayed() writes only the first replay's time ("records a replay
 *   once, keeping its first time");
 * - undefined: findByHash of an unknown hash ("round-trips by hash, ...");
 * - unique: the code hash (primary key); a second insert fails, not yet
 *   proven (hashes of random codes do not collide);
 * - a used code outlives its expiry by a day for replay detection
 *   ("cleanup of expired rows" › "keeps an expired authorization code for a day, ...").
 */
export class AuthorizationCodeRepository {
  constructor(private readonly db: Db) {}

  async insert(c: AuthorizationCodeRecord): Promise<void> {
    await this.db("authorization_codes").insert({
      code_hash: c.codeHash,
      family_id: c.familyId,
      client_id: c.clientId,
      user_id: c.userId,
      redirect_uri: c.redirectUri,
      scope: c.scope,
      nonce: c.nonce,
      code_challenge: c.codeChallenge,
      code_challenge_method: c.codeChallengeMethod,
      auth_time: c.authTime,
      claims: c.claims,
      amr: c.amr ?? null,
      resources: storedResources(c.resources),
      dpop_jkt: c.dpopJkt ?? null,
      sid: c.sid ?? null,
      created_at: c.createdAt,
      expires_at: c.expiresAt,
      consumed_at: c.consumedAt,
      replayed_at: c.replayedAt,
    });
  }

  async findByHash(codeHash: string): Promise<AuthorizationCodeRecord | undefined> {
    const r = await this.db("authorization_codes").where({ code_hash: codeHash }).first();
    if (!r) return undefined;
    return {
      codeHash: r.code_hash,
      familyId: r.family_id,
      clientId: r.client_id,
      userId: r.user_id,
      redirectUri: r.redirect_uri,
      scope: r.scope,
      nonce: r.nonce,
      codeChallenge: r.code_challenge,
      codeChallengeMethod: r.code_challenge_method,
      authTime: Number(r.auth_time),
      claims: r.claims ?? null,
      ...(r.amr ? { amr: r.amr as string } : {}),
      ...loadedResources(r.resources),
      ...(r.dpop_jkt ? { dpopJkt: r.dpop_jkt as string } : {}),
      ...(r.sid ? { sid: r.sid as string } : {}),
      createdAt: Number(r.created_at),
      expiresAt: Number(r.expires_at),
      consumedAt: num(r.consumed_at),
      replayedAt: num(r.replayed_at),
    };
  }

  /**
   * Mark the code used. One conditional UPDATE, so among any number of
   * concurrent callers exactly one gets true.
   */
  async consume(codeHash: string, at: number): Promise<boolean> {
    const updated = await this.db("authorization_codes")
      .where({ code_hash: codeHash })
      .whereNull("consumed_at")
      .update({ consumed_at: at });
    return updated === 1;
  }

  /** Record that a used code was presented again. */
  async markReplayed(codeHash: string, at: number): Promise<void> {
    await this.db("authorization_codes").where({ code_hash: codeHash }).whereNull("replayed_at").update({ replayed_at: at });
  }

  async wasReplayed(codeHash: string): Promise<boolean> {
    const r = await this.db("authorization_codes").where({ code_hash: codeHash }).whereNotNull("replayed_at").first("code_hash");
    return r !== undefined;
  }
}
