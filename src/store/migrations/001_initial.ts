import type { Knex } from "knex";

// Times are epoch milliseconds in bigint columns. Lists are JSON text.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("applications", (t) => {
    t.string("id", 64).primary();
    t.string("name", 200).notNullable().unique();
    t.string("client_id", 200).notNullable().unique();
    t.string("client_secret_hash", 300).notNullable();
    t.text("redirect_uris").notNullable();
    t.text("grant_types").notNullable();
    t.integer("expire_in_hours").notNullable();
    t.integer("refresh_expire_in_hours").notNullable();
    t.text("providers").notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
  });
  await db.schema.createTable("users", (t) => {
    t.string("id", 64).primary();
    t.string("name", 200).notNullable().unique();
    t.string("password_hash", 300);
    t.string("display_name", 200).notNullable().defaultTo("");
    t.string("email", 320).notNullable().defaultTo("");
    t.boolean("email_verified").notNullable().defaultTo(false);
    t.string("avatar", 2000).notNullable().defaultTo("");
    t.string("phone", 50).notNullable().defaultTo("");
    t.string("address", 1000).notNullable().defaultTo("");
    t.boolean("is_admin").notNullable().defaultTo(false);
    t.boolean("disabled").notNullable().defaultTo(false);
    t.text("properties").notNullable().defaultTo("{}");
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
  });
  await db.schema.createTable("signing_keys", (t) => {
    t.string("kid", 64).primary();
    t.string("alg", 16).notNullable();
    t.text("private_jwk").notNullable();
    t.text("public_jwk").notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("active_from").notNullable();
    t.bigInteger("retired_at");
  });
  // A family groups every token descended from one original grant, so reuse
  // of a refresh token or a code can revoke them together.
  await db.schema.createTable("access_tokens", (t) => {
    t.string("token_hash", 64).primary();
    t.string("jti", 64).notNullable().unique();
    t.string("family_id", 64).notNullable().index();
    t.string("client_id", 200).notNullable();
    t.string("user_id", 64);
    t.text("scope").notNullable();
    t.bigInteger("issued_at").notNullable();
    t.bigInteger("expires_at").notNullable().index();
    t.bigInteger("revoked_at");
  });
  await db.schema.createTable("refresh_tokens", (t) => {
    t.string("token_hash", 64).primary();
    t.string("family_id", 64).notNullable().index();
    t.string("client_id", 200).notNullable();
    t.string("user_id", 64);
    t.text("scope").notNullable();
    t.bigInteger("auth_time").notNullable();
    t.bigInteger("issued_at").notNullable();
    t.bigInteger("expires_at").notNullable().index();
    t.bigInteger("consumed_at");
    t.bigInteger("revoked_at");
  });
  // Browser sign-in sessions, keyed by the SHA-256 of the cookie value.
  await db.schema.createTable("sessions", (t) => {
    t.string("id_hash", 64).primary();
    t.string("user_id", 64).notNullable().index();
    t.bigInteger("auth_time").notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("expires_at").notNullable().index();
  });
  await db.schema.createTable("providers", (t) => {
    t.string("name", 100).primary();
    t.string("type", 20).notNullable();
    t.string("display_name", 200).notNullable().defaultTo("");
    t.string("client_id", 500).notNullable();
    t.text("client_secret").notNullable();
    t.string("auth_url", 2000).notNullable();
    t.string("scope", 1000).notNullable();
    t.string("token_url", 2000).notNullable();
    t.string("user_info_url", 2000).notNullable();
    t.string("favicon", 2000).notNullable();
    t.boolean("trust_email").notNullable().defaultTo(false);
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ["sessions", "providers", "refresh_tokens", "access_tokens", "signing_keys", "users", "applications"]) {
    await db.schema.dropTableIfExists(table);
  }
}
