import type { Knex } from "knex";

// The claims a refresh token's grant asked the ID token for (the `id_token`
// member of OIDC's `claims` parameter, Core §5.5), so the ID tokens it
// refreshes into keep them, as userinfo_claims does for userinfo: a JSON
// list of claim names, NULL for the grants without one, which is nearly all.
// Rows made before keep NULL: their refreshed ID tokens carry the scopes'
// claims alone, as before.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.text("id_token_claims").nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.dropColumn("id_token_claims");
  });
}
