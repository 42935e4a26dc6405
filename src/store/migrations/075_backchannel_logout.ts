import type { Knex } from "knex";

// Back-channel logout (issue 45 §6): where an application hears that a
// session ended, and the durable queue of logout tokens to deliver, written
// in the transaction that ends the session; instances claim each row before
// sending it (claimed_until), so that one of several sends it.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.text("backchannel_logout_uri").notNullable().defaultTo("");
    t.boolean("backchannel_logout_session_required").notNullable().defaultTo(false);
    t.boolean("allow_private_backchannel_logout_uri").notNullable().defaultTo(false);
  });
  await db.schema.createTable("backchannel_logouts", (t) => {
    t.string("id", 64).primary();
    t.string("client_id", 200).notNullable();
    t.string("user_id", 64).notNullable();
    t.string("sid", 64).notNullable();
    t.string("reason", 32).notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("next_attempt_at").notNullable();
    t.integer("attempts").notNullable().defaultTo(0);
    t.bigInteger("claimed_until").notNullable().defaultTo(0);
    t.string("claimed_by", 64);
    t.text("last_error");
    t.index(["next_attempt_at"], "backchannel_logouts_due_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("backchannel_logouts");
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("backchannel_logout_uri");
    t.dropColumn("backchannel_logout_session_required");
    t.dropColumn("allow_private_backchannel_logout_uri");
  });
}
