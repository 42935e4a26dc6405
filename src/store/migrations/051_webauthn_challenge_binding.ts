import type { Knex } from "knex";

// Passkeys (issue #46 §2): each WebAuthn challenge is bound to what asked for
// it (a pending sign-in, or a browser session adding a passkey), stored as a
// hash, so a challenge issued to one flow answers no other; one live
// challenge per binding.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("webauthn_challenges", (t) => {
    t.string("binding", 64).notNullable().defaultTo("").index("webauthn_challenges_binding_index");
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable("webauthn_challenges", (t) => {
    t.dropIndex(["binding"], "webauthn_challenges_binding_index");
    t.dropColumn("binding");
  });
}
