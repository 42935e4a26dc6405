import type { Knex } from "knex";

// Self-service accounts (issue 47): sign-up per application, users that must
// verify their email before signing in (only those made by sign-up), the
// single-use links mailed for verification and password reset (stored as
// hashes, one live link per user and purpose), and hourly budgets of
// sign-ups and reset requests, taken atomically.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.boolean("signup").notNullable().defaultTo(false);
  });
  await db.schema.alterTable("users", (t) => {
    t.boolean("must_verify_email").notNullable().defaultTo(false);
  });
  await db.schema.createTable("email_links", (t) => {
    t.string("token_hash", 64).primary();
    t.string("user_id", 64).notNullable();
    t.string("purpose", 16).notNullable();
    t.string("email", 320).notNullable();
    t.text("continue_request");
    t.bigInteger("created_at").notNullable();
    t.bigInteger("expires_at").notNullable();
    t.bigInteger("used_at");
    // One link per user and purpose: a newer one replaces (voids) the older in one statement.
    t.unique(["user_id", "purpose"], { indexName: "email_links_user_purpose" });
    t.index(["expires_at"], "email_links_expires_index");
  });
  await db.schema.createTable("action_limits", (t) => {
    t.string("key", 200).primary();
    t.integer("count").notNullable();
    t.bigInteger("window_started_at").notNullable();
    t.index(["window_started_at"], "action_limits_window_index");
  });
  // Sign-up asks whether an address is taken, ignoring case.
  await db.raw("create index users_email_lower_index on users (lower(email))");
}

export async function down(db: Knex): Promise<void> {
  await db.raw("drop index if exists users_email_lower_index");
  await db.schema.dropTableIfExists("action_limits");
  await db.schema.dropTableIfExists("email_links");
  await db.schema.alterTable("users", (t) => {
    t.dropColumn("must_verify_email");
  });
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("signup");
  });
}
