import type { Knex } from "knex";

// A token family exists to be revoked as one (refresh-token reuse, code
// replay, revocation of a refresh token). An access token with neither a code
// nor a refresh token behind it (client_credentials, implicit) belongs to
// none, and its family_id is NULL: a random id per token cost a write at a
// random place of the family index that nothing would ever read.
//
// Nothing looks a token up by jti; it is a random UUID (RFC 7519 asks only
// that collisions be negligible), so its unique index was the same kind of
// write with no reader. Without the two, client_credentials issued 11% more
// tokens a second on SQLite, 23% more with ~500,000 stored (docs/performance.md).
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.dropUnique(["jti"]);
  });
  // On SQLite this rebuilds the table (Knex copies the rows and recreates its indexes).
  await db.schema.alterTable("access_tokens", (t) => {
    t.string("family_id", 64).nullable().alter();
  });
}

export async function down(db: Knex): Promise<void> {
  // A token of no family gets one of its own, which nothing else shares.
  await db("access_tokens").whereNull("family_id").update({ family_id: db.ref("jti") });
  await db.schema.alterTable("access_tokens", (t) => {
    t.string("family_id", 64).notNullable().alter();
  });
  await db.schema.alterTable("access_tokens", (t) => {
    t.unique(["jti"]);
  });
}
