import type { Knex } from "knex";

// What the sign-in that allowed a device proved (RFC 8176 `amr`, as on
// sessions and codes): the device's tokens carry it, second factor included.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("device_codes", (t) => {
    t.string("amr", 100);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("device_codes", (t) => t.dropColumn("amr"));
}
