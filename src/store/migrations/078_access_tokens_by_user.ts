import type { Knex } from "knex";

// A password change, a disable and a consent's revocation revoke the user's
// access tokens in the transaction that makes the change (revocations.ts,
// consents.ts); this index finds them without reading the table. Partial:
// a client's own token (client_credentials, no user) adds nothing to it, so
// the grant that issues most tokens writes no more than before.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.index(["user_id"], "access_tokens_user_index", { predicate: db.whereNotNull("user_id") });
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("access_tokens", (t) => {
    t.dropIndex([], "access_tokens_user_index");
  });
}
