import type { Knex } from "knex";

// The audit trail (docs/audit.md): one row per security event, read newest
// first with optional filters, and pruned by time. The filter columns are
// plain columns with an index each, led by time order; what else an event
// says (a reason, an admin change's before/after) is one JSON text.
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
    t.index(["time", "id"], "audit_events_time_index");
    t.index(["event", "time"], "audit_events_event_index");
    t.index(["client_id", "time"], "audit_events_client_index");
    t.index(["user_name", "time"], "audit_events_user_index");
    t.index(["actor_name", "time"], "audit_events_actor_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("audit_events");
}
