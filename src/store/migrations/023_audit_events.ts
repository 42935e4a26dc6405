import type { Knex } from "knex";

// The audit trail (docs/audit.md): one row per security event, listed
// newest first (by id: the order they were written) with optional filters,
// and pruned oldest first. Every index costs each token response a B-tree
// insert, so there are two: the application's events and the user's
// (partial: events about no user, such as client_credentials tokens, skip
// it). A type or a time is filtered while walking the ids.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("audit_events", (t) => {
    t.bigIncrements("id").primary();
    t.bigInteger("time").notNullable();
    t.string("event", 64).notNullable();
    t.string("outcome", 16).notNullable();
    t.string("actor_kind", 16).notNullable();
    t.string("actor_id", 64).notNullable();
    t.string("actor_name", 255).notNullable();
    t.string("client_address", 64);
    t.string("client_id", 255);
    t.string("user_id", 64);
    t.string("user_name", 255);
    t.text("details");
    t.index(["client_id", "id"], "audit_events_client_index");
    t.index(["user_name", "id"], "audit_events_user_index", { predicate: db.whereNotNull("user_name") });
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("audit_events");
}
