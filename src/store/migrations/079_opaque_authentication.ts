import type { Knex } from "knex";

// How the user of an opaque access token signed in: `auth_time` (epoch
// seconds), `acr` and `amr` (RFC 8176 values, space-separated). A JWT access
// token carries them in its payload (RFC 9068 §2.2.1); an opaque one has
// none, so its row keeps them. NULL for a JWT's row and a client's token.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.bigInteger("auth_time").nullable();
    t.string("acr", 32).nullable();
    t.string("amr", 200).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.dropColumn("auth_time");
    t.dropColumn("acr");
    t.dropColumn("amr");
  });
}
