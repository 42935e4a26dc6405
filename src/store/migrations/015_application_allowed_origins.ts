import type { Knex } from "knex";

// The browser origins an application's scripts call the API from (CORS,
// src/http/cors.ts): a JSON list of strings, like redirect_uris. Every
// existing application starts with none, so nothing is opened by the change.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.text("allowed_origins").notNullable().defaultTo("[]");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("allowed_origins");
  });
}
