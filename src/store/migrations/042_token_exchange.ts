import type { Knex } from "knex";

// Token exchange (RFC 8693; oauth/grants/tokenExchange.ts): the audiences an
// application may exchange tokens for, and whether it may impersonate (an
// exchange without an actor token). Every application made before may do neither.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.text("exchange_audiences").notNullable().defaultTo("[]");
    t.boolean("allow_impersonation").notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("exchange_audiences");
    t.dropColumn("allow_impersonation");
  });
}
