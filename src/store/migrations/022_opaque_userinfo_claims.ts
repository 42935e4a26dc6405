import type { Knex } from "knex";

// The userinfo claims an opaque access token's grant asked for (OIDC Core
// §5.5's `claims` parameter): a JSON list of names, NULL for nearly every
// token. A JWT access token carries them in its payload; an opaque one has
// none, so its row keeps them.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.text("userinfo_claims").nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.dropColumn("userinfo_claims");
  });
}
