import type { Knex } from "knex";

// Sign-in through external providers: the state of each round trip, the
// links from external accounts to local users, and the email lookup that
// providers trusted with emails use.
export async function up(db: Knex): Promise<void> {
  // Keyed by the SHA-256 of the state. `binding_hash` is the SHA-256 of what
  // the starter holds (the browser's CSRF cookie, or an RPC caller's login
  // secret); `authorization_request_id` is the pending authorize request a
  // browser sign-in finishes, null for one begun over RPC.
  await db.schema.createTable("federation_states", (t) => {
    t.string("state_hash", 64).primary();
    t.string("provider", 100).notNullable();
    t.string("binding_hash", 64).notNullable();
    t.string("authorization_request_id", 64);
    t.bigInteger("created_at").notNullable();
    t.bigInteger("expires_at").notNullable().index();
  });
  // An external account, keyed by provider plus its `sub` or, when the
  // provider sends none, its preferred_username (`external_id_type` says
  // which, so one can never pass for the other). Deleting the user or the
  // provider deletes the link.
  await db.schema.createTable("federated_identities", (t) => {
    t.string("provider", 100).notNullable().references("name").inTable("providers").onDelete("CASCADE");
    t.string("external_id_type", 20).notNullable();
    t.string("external_id", 255).notNullable();
    t.string("user_id", 64).notNullable().references("id").inTable("users").onDelete("CASCADE").index();
    t.string("username", 200).notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
    t.primary(["provider", "external_id_type", "external_id"]);
  });
  await db.schema.alterTable("users", (t) => t.index(["email"], "users_email_index"));
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("users", (t) => t.dropIndex([], "users_email_index"));
  await db.schema.dropTableIfExists("federated_identities");
  await db.schema.dropTableIfExists("federation_states");
}
