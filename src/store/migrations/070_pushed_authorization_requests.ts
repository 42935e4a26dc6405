import type { Knex } from "knex";

// Pushed authorization requests (RFC 9126; oauth/pushedAuthorization.ts): one
// row per request_uri, found by its SHA-256 and deleted by the authorize
// request that uses it; and the application field that allows no other kind.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("pushed_authorization_requests", (t) => {
    t.string("request_uri_hash", 64).primary();
    t.string("client_id", 255).notNullable();
    // Every authorize parameter as pushed (a request object's, once verified), as JSON.
    t.text("params").notNullable();
    t.bigInteger("expires_at").notNullable();
    t.index(["expires_at"], "pushed_authorization_requests_expiry_index");
  });
  await db.schema.alterTable("applications", (t) => {
    t.boolean("require_pushed_authorization_requests").notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("require_pushed_authorization_requests");
  });
  await db.schema.dropTableIfExists("pushed_authorization_requests");
}
