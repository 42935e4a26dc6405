import { lockForTransaction, type Db } from "./db.js";
import { queryDeadlineMs } from "./deadlines.js";
import { GroupCommit } from "./groupCommit.js";
import { rowBy, type RowReader, type RowQuery } from "./rowReader.js";
import { USER_COLUMNS, userFromRow, type UserRow } from "./users.js";
import type { ApplicationProfile, UserRecord } from "../shared/model.js";

/** An issued access token, stored by the SHA-256 of its value. */
export interface AccessTokenRecord {
  tokenHash: string;
  jti: string;
  /** Null for a token no code or refresh token stands behind (client_credentials, implicit): nothing revokes it with others. */
  familyId: string | null;
  clientId: string;
  userId: string | null;
  scope: string;
  issuedAt: number;
  expiresAt: number;
  revokedAt: number | null;
  /** The key that signed it (and its ID token): a key stays published while its tokens live. */
  kid: string | null;
  /**
   * An opaque token's userinfo claims (a JSON list of names, as a refresh
   * token row keeps them), which a JWT carries in its payload instead.
   */
  userinfoClaims?: string;
  /**
   * How an opaque token's user signed in (RFC 9068 §2.2.1), which a JWT
   * carries in its payload instead: epoch seconds, the `acr`, and the RFC
   * 8176 `amr` values space-separated. Absent where the JWT would carry none.
   */
  authTime?: number;
  acr?: string;
  amr?: string;
  /** The resource URIs (RFC 8707) it is meant for, its `aud`; absent for a token meant for its client. */
  resources?: string[];
  /** RFC 9449: the JWK SHA-256 thumbprint of the key it is bound to (its cnf.jkt); absent for a Bearer token. */
  dpopJkt?: string;
}

/** An issued refresh token, stored by the SHA-256 of its value. */
export interface RefreshTokenRecord {
  tokenHash: string;
  familyId: string;
  clientId: string;
  userId: string | null;
  scope: string;
  authTime: number;
  issuedAt: number;
  expiresAt: number;
  consumedAt: number | null;
  revokedAt: number | null;
  /** What the user's sign-in proved (RFC 8176 `amr` values, space-separated); absent for tokens from before they were kept. */
  amr?: string;
  /**
   * The claim names its grant asked userinfo for (OIDC Core §5.5), as a JSON
   * list; absent for the grants that asked none, which is nearly all.
   */
  userinfoClaims?: string;
  /** The same for the ID token: the claim names its grant asked the ID token for. */
  idTokenClaims?: string;
  /** The resource URIs (RFC 8707) its grant named: the most a refreshed access token may name. */
  resources?: string[];
  /** RFC 9449 §5: a public client's refresh token is bound to the key of its DPoP proof; absent when unbound. */
  dpopJkt?: string;
  /** The browser session its grant came from (`sid`), which refreshed ID tokens keep naming. */
  sid?: string;
}

/** Resource URIs in one column, space-separated (a URI has no space); NULL for none. */
export const storedResources = (resources: readonly string[] | undefined): string | null =>
  resources && resources.length > 0 ? resources.join(" ") : null;
export const loadedResources = (column: unknown): { resources?: string[] } =>
  typeof column === "string" && column.length > 0 ? { resources: column.split(" ") } : {};

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
/** A joined column is null (or absent) when the left join found no row. */
const found = (v: unknown): boolean => v !== null && v !== undefined;

interface AccessTokenRow {
  token_hash: string;
  jti: string;
  family_id: string | null;
  client_id: string;
  user_id: string | null;
  scope: string;
  issued_at: number | string;
  expires_at: number | string;
  revoked_at: number | string | null;
  kid: string | null;
  userinfo_claims?: string | null;
  auth_time?: number | string | null;
  acr?: string | null;
  amr?: string | null;
  resources?: string | null;
  dpop_jkt?: string | null;
}

const accessTokenRow = (t: AccessTokenRecord): AccessTokenRow => ({
  token_hash: t.tokenHash,
  jti: t.jti,
  family_id: t.familyId,
  client_id: t.clientId,
  user_id: t.userId,
  scope: t.scope,
  issued_at: t.issuedAt,
  expires_at: t.expiresAt,
  revoked_at: t.revokedAt,
  kid: t.kid,
  // Always present, so rows written together have the same columns.
  userinfo_claims: t.userinfoClaims ?? null,
  auth_time: t.authTime ?? null,
  acr: t.acr ?? null,
  amr: t.amr ?? null,
  resources: storedResources(t.resources),
  dpop_jkt: t.dpopJkt ?? null,
});

const refreshTokenRow = (t: RefreshTokenRecord) => ({
  token_hash: t.tokenHash,
  family_id: t.familyId,
  client_id: t.clientId,
  user_id: t.userId,
  scope: t.scope,
  auth_time: t.authTime,
  issued_at: t.issuedAt,
  expires_at: t.expiresAt,
  consumed_at: t.consumedAt,
  revoked_at: t.revokedAt,
  // Always a value, so rows written together have the same columns.
  userinfo_claims: t.userinfoClaims ?? null,
  id_token_claims: t.idTokenClaims ?? null,
  amr: t.amr ?? null,
  resources: storedResources(t.resources),
  dpop_jkt: t.dpopJkt ?? null,
  sid: t.sid ?? null,
});

/** The rows behind one token response: its access token and, for user grants, its refresh token. */
export interface IssuedTokenRows {
  access: AccessTokenRecord;
  refresh?: RefreshTokenRecord;
}

// Under twenty columns a row: far under SQLite's and PostgreSQL's limits on bound values per statement.
const ISSUED_ROWS_PER_WRITE = 200;

/** Where a token response's rows are written: `add` settles once they are committed. */
export interface IssuedTokenRecorder {
  add(rows: IssuedTokenRows): Promise<void>;
  /** "group commit": many concurrent responses' rows in one write; "one write each": the plain path. */
  readonly path: "group commit" | "one write each";
}

/**
 * Records issued tokens: with `grouped`, the responses of many concurrent
 * requests in one write (groupCommit.ts); otherwise each in its own.
 */
export function issuedTokenRecorder(db: Db, grouped = true): IssuedTokenRecorder {
  const write = async (batch: IssuedTokenRows[]) => {
    const access = batch.map((rows) => accessTokenRow(rows.access));
    const refresh = batch.flatMap((rows) => (rows.refresh ? [refreshTokenRow(rows.refresh)] : []));
    if (refresh.length === 0) {
      await db("access_tokens").insert(access);
      return;
    }
    await db.transaction(async (trx) => {
      await trx("access_tokens").insert(access);
      await trx("refresh_tokens").insert(refresh);
    });
  };
  if (!grouped) return { add: (rows) => write([rows]), path: "one write each" };
  const group = new GroupCommit(write, ISSUED_ROWS_PER_WRITE, queryDeadlineMs(db));
  return { add: (rows) => group.add(rows), path: "group commit" };
}

const BY_HASH = rowBy("access_tokens", "token_hash");

// Aliased columns of the joined rows: both tables have an `id`, and the token's own `user_id` starts with `user_`.
const USER_PREFIX = "u__";
/** Each user column and its alias in a joined row, built once: not a string concatenation per column per lookup. */
const USER_ALIASES = USER_COLUMNS.map((c) => [c, `${USER_PREFIX}${c}`] as const);
const USER_ID = `${USER_PREFIX}id`;
const USER_DISABLED = `${USER_PREFIX}disabled`;
const USER_NAME = `${USER_PREFIX}name`;
const APPLICATION_CLIENT_ID = "a__client_id";
const APPLICATION_PROFILE = "a__profile";

/**
 * An access token and, in the same read, what it stands on: the user it
 * stands for (`userColumns` of it; none for a client's token or a deleted
 * user) and whether the application it was issued to still exists. Users
 * and applications are found by unique keys, so a token has one row.
 */
function tokenWithOwners(name: string, userColumns: readonly string[]): RowQuery {
  return {
    name,
    key: "token_hash",
    build: (db, tokenHashes) =>
      db("access_tokens")
        .leftJoin("users", "users.id", "access_tokens.user_id")
        .leftJoin("applications", "applications.client_id", "access_tokens.client_id")
        .whereIn("access_tokens.token_hash", tokenHashes)
        .select([
          "access_tokens.*",
          ...userColumns.map((c) => `users.${c} as ${USER_PREFIX}${c}`),
          `applications.client_id as ${APPLICATION_CLIENT_ID}`,
          `applications.profile as ${APPLICATION_PROFILE}`,
        ]),
  };
}

/** Introspection's read: of the user, whether it exists and is disabled, and its name (an opaque token's username). */
const STANDING_BY_HASH = tokenWithOwners("access_tokens.token_hash with owners' standing", ["id", "disabled", "name"]);
/** Userinfo's and get-account's read: the whole user. */
const WITH_USER_BY_HASH = tokenWithOwners("access_tokens.token_hash with users and applications", USER_COLUMNS);

/** A token as one read found it with its owners. */
export interface OwnedAccessToken<User> {
  token: AccessTokenRecord;
  /** None for a client's token, or when the user was deleted. */
  user?: User;
  /** False once the application the token was issued to is deleted. */
  applicationExists: boolean;
  /** Its application's profile, when it has one (a proof for a fapi2 client's token is held to its algorithms). */
  applicationProfile?: ApplicationProfile;
}

/**
 * The contract of both token repositories (test/store/contract/tokens.spec.ts,
 * every backend, "access tokens", "refresh tokens", "family revocation",
 * "rotation"):
 * - compare-and-set: RefreshTokenRepository.consume() is one conditional
 *   UPDATE; exactly one of any number of concurrent callers gets true, and
 *   never for a consumed, revoked or expired token ("lets exactly one of 50
 *   concurrent consumes of one token win", "consumes a live token once, and
 *   never a consumed, revoked or expired one");
 * - rotation is all or nothing: rotate() consumes the old refresh token and
 *   records the new rows in one transaction; of concurrent rotations of one
 *   token exactly one records anything ("records the rows of exactly one of
 *   20 concurrent rotations of one token", "records nothing for a consumed,
 *   revoked or expired token");
 * - revocation keeps the first time: revoke() ("revokes one access token,
 *   keeping the first revocation time") and revokeFamily(), which revokes a
 *   family's access and refresh tokens in one transaction ("revokes every
 *   access and refresh token of one family, and nothing else");
 * - undefined: every find of an unknown hash; lookups made together share
 *   queries, each answered with its own row ("round-trips by hash, ...",
 *   "answers lookups made together, each with its own row, however many share a query");
 * - atomic with the caller: insert() given `conn` joins its transaction
 *   ("joins a caller's transaction: a rolled-back insert leaves no row");
 * - may re-run: issuedTokenRecorder writes many responses' rows at once, and
 *   a batch that fails is written again row set by row set (groupCommit.ts;
 *   test/store/groupCommit.spec.ts, not on every backend). That one
 *   response's access and refresh rows commit together is not yet proven;
 * - unique: the token hash (primary key), not yet proven (hashes of random tokens).
 */
export class AccessTokenRepository {
  constructor(
    private readonly db: Db,
    private readonly reads: RowReader,
  ) {}

  /** `conn` lets the insert join a caller's transaction. */
  async insert(t: AccessTokenRecord, conn: Db = this.db): Promise<void> {
    await conn("access_tokens").insert(accessTokenRow(t));
  }

  /** Revoke one access token; an already revoked one keeps its first time. */
  async revoke(tokenHash: string, at: number): Promise<void> {
    await this.db("access_tokens").where({ token_hash: tokenHash }).whereNull("revoked_at").update({ revoked_at: at });
  }

  async findByHash(tokenHash: string): Promise<AccessTokenRecord | undefined> {
    const r = await this.reads.first<AccessTokenRow>(BY_HASH, tokenHash);
    return r && accessTokenFromRow(r);
  }

  /**
   * The token, whether its user exists and is disabled (and its name), and
   * whether its application exists, in one read: introspection's whole lookup.
   */
  async findStandingByHash(tokenHash: string): Promise<OwnedAccessToken<{ disabled: boolean; name: string }> | undefined> {
    const r = await this.reads.first<AccessTokenRow & Record<string, unknown>>(STANDING_BY_HASH, tokenHash);
    if (!r) return undefined;
    const userFound = found(r[USER_ID]);
    return {
      token: accessTokenFromRow(r),
      user: userFound ? { disabled: Boolean(r[USER_DISABLED]), name: String(r[USER_NAME]) } : undefined,
      applicationExists: found(r[APPLICATION_CLIENT_ID]),
    };
  }

  /** The token, its user and whether its application exists, in one read: userinfo's and get-account's whole lookup. */
  async findWithUserByHash(tokenHash: string): Promise<OwnedAccessToken<UserRecord> | undefined> {
    const r = await this.reads.first<AccessTokenRow & Record<string, unknown>>(WITH_USER_BY_HASH, tokenHash);
    if (!r) return undefined;
    const user: Record<string, unknown> = {};
    for (const [column, alias] of USER_ALIASES) user[column] = r[alias];
    return {
      token: accessTokenFromRow(r),
      user: found(user.id) ? userFromRow(user as unknown as UserRow) : undefined,
      applicationExists: found(r[APPLICATION_CLIENT_ID]),
      ...(r[APPLICATION_PROFILE] ? { applicationProfile: r[APPLICATION_PROFILE] as ApplicationProfile } : {}),
    };
  }
}

function accessTokenFromRow(r: AccessTokenRow): AccessTokenRecord {
  return {
    tokenHash: r.token_hash,
    jti: r.jti,
    familyId: r.family_id,
    clientId: r.client_id,
    userId: r.user_id,
    scope: r.scope,
    issuedAt: Number(r.issued_at),
    expiresAt: Number(r.expires_at),
    revokedAt: num(r.revoked_at),
    kid: r.kid ?? null,
    ...(r.userinfo_claims ? { userinfoClaims: r.userinfo_claims } : {}),
    ...(found(r.auth_time) ? { authTime: Number(r.auth_time) } : {}),
    ...(r.acr ? { acr: r.acr } : {}),
    ...(r.amr ? { amr: r.amr } : {}),
    ...loadedResources(r.resources),
    ...(r.dpop_jkt ? { dpopJkt: r.dpop_jkt } : {}),
  };
}

export class RefreshTokenRepository {
  constructor(private readonly db: Db) {}

  async insert(t: RefreshTokenRecord, conn: Db = this.db): Promise<void> {
    await conn("refresh_tokens").insert(refreshTokenRow(t));
  }

  /**
   * Mark a live refresh token consumed. One conditional UPDATE: of any number
   * of concurrent callers exactly one sees `true`, on SQLite and PostgreSQL
   * alike (the loser's UPDATE re-checks the row after the winner commits).
   */
  async consume(tokenHash: string, at: number, conn: Db = this.db): Promise<boolean> {
    return (await liveRefreshToken(conn, tokenHash, at).update({ consumed_at: at })) === 1;
  }

  /**
   * Rotation (RFC 6749 §6, RFC 9700 §4.14.2): consume the live refresh token
   * `consumedHash` and record `issued` in one transaction. Of any number of
   * concurrent callers exactly one sees `true`; the others write nothing.
   */
  rotate(consumedHash: string, at: number, issued: IssuedTokenRows): Promise<boolean> {
    return this.recordIf((trx) => this.consume(consumedHash, at, trx), issued);
  }

  /**
   * A refresh without rotation (FAPI 2.0 §5.3.2.1): record `issued` while
   * the refresh token `liveHash` stays live, in one transaction. Its first
   * statement is a conditional UPDATE that changes nothing but holds the
   * live row until the transaction ends, so a revocation or a consumption
   * of it either comes first, and nothing is recorded, or waits. Any number
   * of concurrent callers on a live token see `true`.
   */
  issueKeeping(liveHash: string, at: number, issued: IssuedTokenRows): Promise<boolean> {
    return this.recordIf(async (trx) => (await liveRefreshToken(trx, liveHash, at).update({ consumed_at: null })) === 1, issued);
  }

  /** Record `issued` in one transaction with `condition`, its first statement, and only if it holds. */
  private recordIf(condition: (trx: Db) => Promise<boolean>, issued: IssuedTokenRows): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      if (!(await condition(trx))) return false;
      await trx("access_tokens").insert(accessTokenRow(issued.access));
      if (issued.refresh) await trx("refresh_tokens").insert(refreshTokenRow(issued.refresh));
      return true;
    });
  }

  /** Revoke every access and refresh token of a family (one grant's tokens), all or none. */
  async revokeFamily(familyId: string, at: number): Promise<void> {
    await revokeFamily(this.db, familyId, at);
  }

  async findByHash(tokenHash: string): Promise<RefreshTokenRecord | undefined> {
    const r = await this.db("refresh_tokens").where({ token_hash: tokenHash }).first();
    if (!r) return undefined;
    return {
      tokenHash: r.token_hash,
      familyId: r.family_id,
      clientId: r.client_id,
      userId: r.user_id,
      scope: r.scope,
      authTime: Number(r.auth_time),
      issuedAt: Number(r.issued_at),
      expiresAt: Number(r.expires_at),
      consumedAt: num(r.consumed_at),
      revokedAt: num(r.revoked_at),
      ...(r.userinfo_claims ? { userinfoClaims: r.userinfo_claims as string } : {}),
      ...(r.id_token_claims ? { idTokenClaims: r.id_token_claims as string } : {}),
      ...(r.amr ? { amr: r.amr as string } : {}),
      ...loadedResources(r.resources),
      ...(r.dpop_jkt ? { dpopJkt: r.dpop_jkt as string } : {}),
      ...(r.sid ? { sid: r.sid as string } : {}),
    };
  }
}

/** The refresh token `tokenHash` while it is live at `at`: neither consumed nor revoked, nor expired. */
function liveRefreshToken(conn: Db, tokenHash: string, at: number) {
  return conn("refresh_tokens").where({ token_hash: tokenHash }).whereNull("consumed_at").whereNull("revoked_at").where("expires_at", ">", at);
}

/**
 * RefreshTokenRepository.revokeFamily, for the store's other repositories.
 * A refresh of the family that holds its refresh token's row (rotate,
 * issueKeeping) makes the refresh_tokens UPDATE wait; its rows, committed
 * meanwhile, are outside that statement's snapshot on PostgreSQL, so both
 * tables are updated once more after it: what the refresh recorded is
 * revoked too, not left live in a revoked family. Revocations of one family
 * take turns under a transaction's advisory lock: two that each held a row
 * the other's second pass wanted would deadlock.
 */
export async function revokeFamily(db: Db, familyId: string, at: number): Promise<void> {
  await db.transaction(async (trx) => {
    await lockForTransaction(trx, `token-family/${familyId}`);
    for (let pass = 0; pass < 2; pass++) {
      await trx("access_tokens").where({ family_id: familyId }).whereNull("revoked_at").update({ revoked_at: at });
      await trx("refresh_tokens").where({ family_id: familyId }).whereNull("revoked_at").update({ revoked_at: at });
    }
  });
}
