import type { Knex } from "knex";

// JWT client authentication (RFC 7523 §2.2, OIDC Core §9; oauth/clientAssertion.ts).
// Each application says how it authenticates; `private_key_jwt` ones hold a
// JWK Set inline or its URL, and `client_secret_jwt` ones their secret sealed
// (an HMAC key must be known, not only its hash). Every application made
// before authenticates with its secret, as it did.
// The jti of every accepted assertion is kept until the assertion expires, so
// a replay is refused by one conditional insert on every instance (RFC 7523 §3).
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.string("token_endpoint_auth_method", 32).notNullable().defaultTo("");
    t.text("jwks").notNullable().defaultTo("");
    t.string("jwks_uri", 2048).notNullable().defaultTo("");
    t.text("client_secret_sealed").notNullable().defaultTo("");
  });
  await db.schema.createTable("client_assertion_jtis", (t) => {
    t.string("key", 64).primary();
    t.bigInteger("expires_at").notNullable();
    t.index(["expires_at"], "client_assertion_jtis_expiry_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("client_assertion_jtis");
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("token_endpoint_auth_method");
    t.dropColumn("jwks");
    t.dropColumn("jwks_uri");
    t.dropColumn("client_secret_sealed");
  });
}
