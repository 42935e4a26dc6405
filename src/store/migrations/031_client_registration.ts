import type { Knex } from "knex";

// Registered clients (RFC 7591): an application may require the user's
// consent, and a registered one keeps its registration (the client's
// metadata, the hash of its RFC 7592 registration access token) as JSON.
// registration_counts holds each client address's successful registrations
// in the current window (--registration-max-per-hour).
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.boolean("consent_required").notNullable().defaultTo(false);
    t.text("registration").nullable();
  });
  await db.schema.createTable("registration_counts", (t) => {
    t.string("key", 100).primary();
    t.integer("count").notNullable();
    t.bigInteger("window_started_at").notNullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("registration_counts");
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("registration");
    t.dropColumn("consent_required");
  });
}
