import type { Knex } from "knex";

// Browser sign-in: authorization codes, authorize requests waiting for a
// sign-in, and the failure counters of the brute-force policy.
export async function up(db: Knex): Promise<void> {
  // Keyed by the SHA-256 of the code. `family_id` is chosen when the code is
  // issued, so a replay can revoke every token minted from it.
  await db.schema.createTable("authorization_codes", (t) => {
    t.string("code_hash", 64).primary();
    t.string("family_id", 64).notNullable();
    t.string("client_id", 200).notNullable();
    t.string("user_id", 64).notNullable();
    t.text("redirect_uri").notNullable();
    t.text("scope").notNullable();
    t.string("nonce", 512);
    t.string("code_challenge", 128);
    t.string("code_challenge_method", 16);
    t.bigInteger("auth_time").notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("expires_at").notNullable().index();
    t.bigInteger("consumed_at");
    t.bigInteger("replayed_at");
  });
  // A validated authorize request, kept server-side while the login page is
  // open, so the form cannot alter client, redirect_uri or scope.
  await db.schema.createTable("authorization_requests", (t) => {
    t.string("id", 64).primary();
    t.string("csrf_hash", 64).notNullable();
    t.text("request").notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("expires_at").notNullable().index();
  });
  // Failed sign-ins per key (a hashed user name today; an IP later).
  await db.schema.createTable("login_failures", (t) => {
    t.string("key", 100).primary();
    t.integer("failures").notNullable();
    t.bigInteger("window_started_at").notNullable().index();
    t.bigInteger("locked_until").notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ["login_failures", "authorization_requests", "authorization_codes"]) {
    await db.schema.dropTableIfExists(table);
  }
}
