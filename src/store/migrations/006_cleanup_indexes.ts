import type { Knex } from "knex";

// The cleanup job keeps a refresh token until every token of its family has
// expired (so reuse of a consumed one is still detected). Its "does the
// family have a live token" probe reads (family_id, expires_at); that index
// also serves every lookup by family alone, so it replaces the single-column one.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.index(["family_id", "expires_at"], "refresh_tokens_family_expiry_index");
    t.dropIndex(["family_id"]);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.index(["family_id"]);
    t.dropIndex([], "refresh_tokens_family_expiry_index");
  });
}
