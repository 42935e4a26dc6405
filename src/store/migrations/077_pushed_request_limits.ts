import type { Knex } from "knex";

// Limits on what a client may leave in the store. Its live pushed requests
// are counted by client and expiry before each push (the cap per client,
// store/pushedAuthorizationRequests.ts). The jti of every request object
// that carries one is kept until the object's exp (RFC 7519 §4.1.7;
// oauth/requestObject.ts), so a replay is refused by one conditional insert
// on every instance; the cleanup job sweeps the rest.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("pushed_authorization_requests", (t) => {
    t.index(["client_id", "expires_at"], "pushed_authorization_requests_client_index");
  });
  await db.schema.createTable("request_object_jtis", (t) => {
    t.string("key", 64).primary();
    t.bigInteger("expires_at").notNullable();
    t.index(["expires_at"], "request_object_jtis_expiry_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("request_object_jtis");
  await db.schema.alterTable("pushed_authorization_requests", (t) => {
    t.dropIndex(["client_id", "expires_at"], "pushed_authorization_requests_client_index");
  });
}
