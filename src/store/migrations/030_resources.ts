import type { Knex } from "knex";

// Resource servers (RFC 8707): the APIs a token may be meant for, by URI,
// with the scopes each understands (a JSON list of {name, description}).
// A code, a refresh token and an access token keep the resource URIs their
// grant named (space-separated, NULL for none): the access token's `aud`,
// and the most a later token of the same grant may name.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("resources", (t) => {
    t.string("uri", 2000).primary();
    t.string("name", 200).notNullable();
    t.text("scopes").notNullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
  });
  for (const table of ["authorization_codes", "refresh_tokens", "access_tokens"]) {
    await db.schema.alterTable(table, (t) => {
      t.text("resources").nullable();
    });
  }
}

export async function down(db: Knex): Promise<void> {
  for (const table of ["authorization_codes", "refresh_tokens", "access_tokens"]) {
    await db.schema.alterTable(table, (t) => {
      t.dropColumn("resources");
    });
  }
  await db.schema.dropTableIfExists("resources");
}
