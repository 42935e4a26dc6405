import type { Knex } from "knex";

// Back-channel logout (issue 45 §6): each browser session gets a `sid` of its
// own (OIDC Back-Channel Logout 1.0 §2.1), which is not its cookie's hash and
// travels in the ID tokens issued from it, so codes and refresh tokens keep
// it; and which clients were issued a code or token from which session
// (session_clients), so that its end can be told to each of them.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("sessions", (t) => {
    t.string("sid", 64);
  });
  // Sessions from before the column get a random sid of their own.
  const FILL_PG = "update sessions set sid = md5(random()::text || id_hash) where sid is null";
  const FILL_SQLITE = "update sessions set sid = lower(hex(randomblob(16))) where sid is null";
  if (db.client.driverName === "pg") await db.raw(FILL_PG);
  else await db.raw(FILL_SQLITE);
  await db.schema.alterTable("sessions", (t) => {
    t.unique(["sid"], { indexName: "sessions_sid_unique" });
  });
  for (const table of ["authorization_codes", "refresh_tokens"]) {
    await db.schema.alterTable(table, (t) => {
      t.string("sid", 64);
    });
  }
  await db.schema.createTable("session_clients", (t) => {
    // `<sid> <client_id>`: one row per session and client, under a one-column key the cleanup job deletes by.
    t.string("key", 300).primary();
    t.string("sid", 64).notNullable();
    t.string("client_id", 200).notNullable();
    t.bigInteger("expires_at").notNullable();
    t.index(["sid"], "session_clients_sid_index");
    t.index(["expires_at"], "session_clients_expires_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("session_clients");
  for (const table of ["refresh_tokens", "authorization_codes"]) {
    await db.schema.alterTable(table, (t) => {
      t.dropColumn("sid");
    });
  }
  await db.schema.alterTable("sessions", (t) => {
    t.dropUnique(["sid"], "sessions_sid_unique");
  });
  await db.schema.alterTable("sessions", (t) => {
    t.dropColumn("sid");
  });
}
