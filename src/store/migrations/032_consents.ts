import type { Knex } from "knex";

// What a user allowed an application that asks for consent (issue 43 §2):
// the scopes and resource URIs granted, space-separated. A user's or an
// application's consents go with it.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("consents", (t) => {
    t.string("user_id", 64).notNullable().references("id").inTable("users").onDelete("CASCADE");
    t.string("client_id", 200).notNullable().references("client_id").inTable("applications").onDelete("CASCADE").onUpdate("CASCADE").index();
    t.text("scopes").notNullable();
    t.text("resources").notNullable();
    t.bigInteger("granted_at").notNullable();
    t.primary(["user_id", "client_id"]);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("consents");
}
