import type { Knex } from "knex";

// Second factors (issue #46): one-time code secrets (RFC 6238) and passkeys
// (WebAuthn), recovery codes, WebAuthn challenges; what each sign-in proved
// (`amr`, RFC 8176) on its session, code and refresh token; the factor a
// sign-in step has passed on its pending authorize request; and each
// application's policy.
export async function up(db: Knex): Promise<void> {
  // `secret` is the TOTP secret, sealed with --secret-key when set; a
  // passkey keeps its credential id, public key and signature counter.
  // `confirmed` is false while a one-time code waits for its first valid code.
  // `last_step` is the newest TOTP step accepted, so a code works once.
  await db.schema.createTable("user_factors", (t) => {
    t.string("id", 64).primary();
    t.string("user_id", 64).notNullable().references("id").inTable("users").onDelete("CASCADE").index();
    t.string("type", 16).notNullable();
    t.string("name", 100).notNullable();
    t.text("secret");
    t.string("credential_id", 1024).unique();
    t.text("public_key");
    t.bigInteger("counter").notNullable().defaultTo(0);
    t.string("transports", 200).notNullable().defaultTo("");
    t.boolean("confirmed").notNullable().defaultTo(false);
    t.bigInteger("last_step").notNullable().defaultTo(-1);
    t.bigInteger("created_at").notNullable();
    t.bigInteger("last_used_at");
  });
  await db.schema.createTable("recovery_codes", (t) => {
    t.string("user_id", 64).notNullable().references("id").inTable("users").onDelete("CASCADE");
    t.string("code_hash", 64).notNullable();
    t.bigInteger("used_at");
    t.primary(["user_id", "code_hash"]);
  });
  // Keyed by the challenge itself (random, 256 bits); deleted when used.
  await db.schema.createTable("webauthn_challenges", (t) => {
    t.string("challenge", 100).primary();
    t.string("user_id", 64);
    t.string("purpose", 16).notNullable();
    t.bigInteger("expires_at").notNullable().index();
  });
  for (const table of ["sessions", "authorization_codes", "refresh_tokens"]) {
    await db.schema.alterTable(table, (t) => {
      t.string("amr", 100);
    });
  }
  await db.schema.alterTable("sessions", (t) => {
    t.string("factor_id", 64);
  });
  await db.schema.alterTable("authorization_requests", (t) => {
    t.string("user_id", 64);
    t.string("amr", 100);
    t.string("factor_id", 64);
  });
  await db.schema.alterTable("applications", (t) => {
    t.string("mfa", 16).notNullable().defaultTo("optional");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => t.dropColumn("mfa"));
  await db.schema.alterTable("authorization_requests", (t) => {
    t.dropColumn("user_id");
    t.dropColumn("amr");
    t.dropColumn("factor_id");
  });
  await db.schema.alterTable("sessions", (t) => t.dropColumn("factor_id"));
  for (const table of ["sessions", "authorization_codes", "refresh_tokens"]) {
    await db.schema.alterTable(table, (t) => t.dropColumn("amr"));
  }
  await db.schema.dropTableIfExists("webauthn_challenges");
  await db.schema.dropTableIfExists("recovery_codes");
  await db.schema.dropTableIfExists("user_factors");
}
