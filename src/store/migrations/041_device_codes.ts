import type { Knex } from "knex";

// The device authorization grant (RFC 8628; oauth/deviceAuthorization.ts):
// one row per device code, found by the SHA-256 of the device code (polls)
// or by its user code (the /device page). Status moves pending → approved
// or denied → issued, each step one conditional UPDATE.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("device_codes", (t) => {
    t.string("device_code_hash", 64).primary();
    t.string("user_code", 16).notNullable().unique();
    t.string("client_id", 255).notNullable();
    t.text("scope").notNullable();
    t.string("status", 16).notNullable();
    t.string("user_id", 64);
    t.bigInteger("auth_time");
    t.integer("interval_seconds").notNullable();
    t.bigInteger("last_polled_at").notNullable().defaultTo(0);
    t.bigInteger("created_at").notNullable();
    t.bigInteger("expires_at").notNullable();
    t.index(["expires_at"], "device_codes_expiry_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("device_codes");
}
