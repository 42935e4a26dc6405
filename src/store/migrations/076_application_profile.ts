import type { Knex } from "knex";

// The security profile an application is held to (oauth/fapi2.ts): "" for
// none, as every application made before, or `fapi2`.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.string("profile", 16).notNullable().defaultTo("");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("profile");
  });
}
