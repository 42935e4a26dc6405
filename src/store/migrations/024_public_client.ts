import type { Knex } from "knex";

// Public clients (RFC 6749 §2.1): applications with no secret anybody knows,
// such as single-page apps (oauth/publicClients.ts). Every application made
// before was confidential, and the console's own is made public again at the
// next start (accounts/consoleClient.ts).
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.boolean("public_client").notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("public_client");
  });
}
