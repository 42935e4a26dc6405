import type { Knex } from "knex";

// 1. An application's token format, with Casdoor's names: `JWT-Standard`
//    (OIDC's standard claims, what every application had) or `JWT`
//    (Casdoor's user-object claims). Existing applications keep theirs.
// 2. The claims a refresh token's grant asked userinfo for (the `userinfo`
//    member of OIDC's `claims` parameter, Core §5.5), so the access tokens
//    it refreshes into keep them: a JSON list of claim names, NULL for the
//    grants without one, which is nearly all. Access tokens carry the list
//    in their own payload, so their table is left alone.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.text("token_format").notNullable().defaultTo("JWT-Standard");
  });
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.text("userinfo_claims").nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("refresh_tokens", (t) => {
    t.dropColumn("userinfo_claims");
  });
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("token_format");
  });
}
