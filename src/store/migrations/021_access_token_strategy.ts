import type { Knex } from "knex";

// An application's access token strategy (Hydra's name): `jwt`, a signed JWT
// (what every application had), or `opaque`, a random string. Both kinds are
// stored as the SHA-256 of their value, so access_tokens is left alone.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.text("access_token_strategy").notNullable().defaultTo("jwt");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("access_token_strategy");
  });
}
