import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";
import { endSignIns, endUserAccess } from "./revocations.js";
import type { SessionEndReason } from "./backchannelLogouts.js";
import { rowBy, type RowReader } from "./rowReader.js";
import type { UserRecord } from "../shared/model.js";
import { changedColumns } from "./changedColumns.js";


export interface UserRow {
  id: string;
  name: string;
  password_hash: string | null;
  display_name: string;
  email: string;
  email_verified: boolean | number;
  avatar: string;
  phone: string;
  address: string;
  is_admin: boolean | number;
  disabled: boolean | number;
  properties: string;
  must_verify_email?: boolean | number;
  created_at: number;
  updated_at: number;
}

/** Every column of a user row, for queries that fetch a user along with something else. */
export const USER_COLUMNS = [
  "id", "name", "password_hash", "display_name", "email", "email_verified", "avatar",
  "phone", "address", "is_admin", "disabled", "properties", "must_verify_email", "created_at", "updated_at",
] as const satisfies readonly (keyof UserRow)[];

const BY_ID = rowBy("users", "id");

export const userFromRow = (r: UserRow): UserRecord => ({
  id: r.id,
  name: r.name,
  passwordHash: r.password_hash,
  displayName: r.display_name,
  email: r.email,
  emailVerified: Boolean(r.email_verified),
  avatar: r.avatar,
  phone: r.phone,
  address: r.address,
  isAdmin: Boolean(r.is_admin),
  disabled: Boolean(r.disabled),
  properties: JSON.parse(r.properties),
  // Only when set: most users never have it, and their records stay as they were.
  ...(r.must_verify_email ? { mustVerifyEmail: true } : {}),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const toRow = (u: UserRecord): UserRow => ({
  id: u.id,
  name: u.name,
  password_hash: u.passwordHash,
  display_name: u.displayName,
  email: u.email,
  email_verified: u.emailVerified,
  avatar: u.avatar,
  phone: u.phone,
  address: u.address,
  is_admin: u.isAdmin,
  disabled: u.disabled,
  properties: JSON.stringify(u.properties),
  must_verify_email: u.mustVerifyEmail ?? false,
  created_at: u.createdAt,
  updated_at: u.updatedAt,
});

/**
 * What a user's update ends with it, in its transaction (revocations.ts
 * endUserAccess): its refresh and access tokens, browser sessions and
 * unredeemed codes (a password change, a disable).
 */
export interface UserUpdateEnds {
  /** Epoch ms written as the revocation time. */
  at: number;
  /** Why its sessions end, told to their clients (back-channel logout). */
  reason: SessionEndReason;
}

/**
 * The contract (test/store/contract/users.spec.ts, every backend, "users"):
 * - unique: the name; a second one throws ConflictError ("refuses a second
 *   user with the same name");
 * - undefined: findById and findByName of an unknown or deleted user;
 *   deleteByName says whether a row went ("updates, lists and deletes");
 * - findByEmail ignores case and verification ("email links" › "finds users by email, ignoring case");
 * - findByVerifiedEmail matches exactly (case included) and only verified
 *   emails ("finds users by exact verified email, and tells which names are taken");
 * - atomic with the caller: insert() given `conn` joins its transaction
 *   ("federated identities" › "joins a caller's transaction: a rolled-back
 *   user and link leave no row");
 * - a deleted user's links go with it ("federated identities" › "goes with
 *   its user or its provider");
 * - no compare-and-set: update() is a plain write by id, the last one wins.
 */
export class UserRepository {
  constructor(
    private readonly db: Db,
    private readonly reads: RowReader,
  ) {}

  /** `conn` lets a read or insert join a caller's transaction. */
  async findById(id: string, conn?: Db): Promise<UserRecord | undefined> {
    const row = conn ? await conn<UserRow>("users").where({ id }).first() : await this.reads.first<UserRow>(BY_ID, id);
    return row && userFromRow(row);
  }

  async findByName(name: string): Promise<UserRecord | undefined> {
    const row = await this.db<UserRow>("users").where({ name }).first();
    return row && userFromRow(row);
  }

  async list(): Promise<UserRecord[]> {
    return (await this.db<UserRow>("users").orderBy("name")).map(userFromRow);
  }

  /**
   * Users by name after `afterName` (exclusive), at most `limit` (none when
   * 0), whose name, display name or email contains `search` ignoring case,
   * and how many match in all (contract: "users: search and pages").
   */
  async page(query: { search: string; limit: number; afterName?: string }): Promise<{ users: UserRecord[]; total: number }> {
    const matching = () => {
      const rows = this.db<UserRow>("users");
      if (!query.search) return rows;
      // LIKE with the caller's text as a literal: its wildcards and the escape character escaped.
      // Both sides are folded by the database's lower(), so they fold alike (SQLite's folds ASCII only).
      const pattern = `%${query.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      return rows.where((q) => {
        for (const column of ["name", "display_name", "email"]) q.orWhereRaw("lower(??) like lower(?) escape '\\'", [column, pattern]);
      });
    };
    const counted = await matching().count<{ n: number | string }[]>({ n: "*" });
    const rows = matching().orderBy("name");
    if (query.afterName !== undefined) rows.where("name", ">", query.afterName);
    if (query.limit > 0) rows.limit(query.limit);
    return { users: (await rows).map(userFromRow), total: Number(counted[0]?.n ?? 0) };
  }

  /** Users whose email is exactly `email` and verified. */
  async findByVerifiedEmail(email: string, conn: Db = this.db): Promise<UserRecord[]> {
    return (await conn<UserRow>("users").where({ email, email_verified: true }).orderBy("name")).map(userFromRow);
  }

  /** Users whose email is `email`, ignoring case, verified or not (sign-up's "is this address taken"). */
  async findByEmail(email: string): Promise<UserRecord[]> {
    return (await this.db<UserRow>("users").whereRaw("lower(email) = lower(?)", [email]).orderBy("name").limit(10)).map(userFromRow);
  }

  /** Which of `names` are taken. */
  async takenNames(names: readonly string[], conn: Db = this.db): Promise<Set<string>> {
    const rows = await conn<UserRow>("users").whereIn("name", [...names]).select("name");
    return new Set(rows.map((r) => r.name));
  }

  async insert(user: UserRecord, conn: Db = this.db): Promise<void> {
    await guardUnique("user", "name", () => conn("users").insert(toRow(user)));
  }

  /**
   * With `before`, the user as the caller read it, only the columns that
   * differ from it are written (and updated_at): a field another call
   * changed meanwhile (a demotion, a disabling) is not written back as it was.
   */
  async update(user: UserRecord, ends?: UserUpdateEnds, before?: UserRecord): Promise<void> {
    const row = before ? changedColumns(toRow(before), toRow(user)) : toRow(user);
    if (!ends) {
      await guardUnique("user", "name", () => this.db("users").where({ id: user.id }).update(row));
      return;
    }
    await guardUnique("user", "name", () =>
      this.db.transaction(async (trx) => {
        await trx("users").where({ id: user.id }).update(row);
        await endUserAccess(trx, user.id, ends.at, ends.reason);
      }),
    );
  }

  /**
   * Returns whether a row was deleted. The user's refresh tokens are revoked
   * and its sessions deleted with it, at `at` (epoch ms); its access tokens
   * end because their user is gone (every lookup joins it, tokens.ts), and
   * ids are never reused, so they are left unwritten.
   */
  async deleteByName(name: string, at = Date.now()): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const row = await trx<UserRow>("users").where({ name }).first("id");
      if (!row) return false;
      await trx("users").where({ id: row.id }).delete();
      await endSignIns(trx, row.id, at, "user_deleted");
      return true;
    });
  }
}
