import type { Knex } from "knex";

// An application's signing algorithm for its ID tokens and JWT access tokens:
// RS256 (what every application had), PS256, ES256 or EdDSA (Ed25519).
// Existing applications keep RS256. signing_keys already records each key's alg.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.text("signing_alg").notNullable().defaultTo("RS256");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("signing_alg");
  });
}
