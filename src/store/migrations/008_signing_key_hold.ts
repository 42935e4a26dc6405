import type { Knex } from "knex";

// An ID token issued on its own (response_type=id_token) has no access-token
// row to keep its key published; its key records the latest such expiry.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("signing_keys", (t) => {
    t.bigInteger("held_until");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("signing_keys", (t) => {
    t.dropColumn("held_until");
  });
}
