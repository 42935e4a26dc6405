import type { Knex } from "knex";

// The authorize request's `claims` parameter (OIDC Core §5.5) travels with
// its code, so the token endpoint puts the claims it asks for in the ID
// token. NULL for the codes of requests without one, which is nearly all.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("authorization_codes", (t) => {
    t.text("claims").nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("authorization_codes", (t) => {
    t.dropColumn("claims");
  });
}
