import type { Knex } from "knex";

// Which key signed each access token (and the ID token minted with it), so a
// rotated-out key is unpublished only after the last of its tokens expires.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.string("kid", 64);
    t.index(["kid", "expires_at"], "access_tokens_kid_expires_at_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.dropIndex(["kid", "expires_at"], "access_tokens_kid_expires_at_index");
    t.dropColumn("kid");
  });
}
