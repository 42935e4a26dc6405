import type { Knex } from "knex";

// The account page (issue #46 §5): which applications with `mfa: required`
// each user has signed in to, so that removing the user's last factor asks
// for confirmation first. One row per user and application, written only
// when such an application gets a code or tokens.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("mfa_sign_ins", (t) => {
    t.string("user_id", 64).notNullable().references("id").inTable("users").onDelete("CASCADE");
    t.string("client_id", 200).notNullable();
    t.bigInteger("signed_in_at").notNullable();
    t.primary(["user_id", "client_id"]);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("mfa_sign_ins");
}
