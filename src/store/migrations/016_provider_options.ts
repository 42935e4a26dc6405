import type { Knex } from "knex";

// Provider options beyond the spec's fields (user mapping, token endpoint
// authentication, PKCE, insecure URLs, GitHub's emails URL): one JSON object,
// so that a new option needs no new column. Every existing provider starts
// with none, which keeps its behaviour. A round trip with PKCE keeps its
// code_verifier with its state until the callback.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("providers", (t) => {
    t.text("options").notNullable().defaultTo("{}");
  });
  await db.schema.alterTable("federation_states", (t) => {
    t.string("code_verifier", 128);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("federation_states", (t) => {
    t.dropColumn("code_verifier");
  });
  await db.schema.alterTable("providers", (t) => {
    t.dropColumn("options");
  });
}
