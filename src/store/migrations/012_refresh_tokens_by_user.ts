import type { Knex } from "knex";

// A password change, a disable and a deletion revoke the user's refresh
// tokens in the transaction that makes the change (revocations.ts); this
// index finds them without reading the table. Refresh tokens are written by
// the user grants only, each of which also signs two or three JWTs, so the
// extra index write is small beside them. Access tokens, written by every
// grant, got theirs later, leaving out those of no user (078).
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.index(["user_id"], "refresh_tokens_user_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.dropIndex([], "refresh_tokens_user_index");
  });
}
