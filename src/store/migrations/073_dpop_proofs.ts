import type { Knex } from "knex";

// DPoP proofs (RFC 9449 §11.1; oauth/dpop.ts). The jti of every accepted
// proof is kept until the proof's iat window ends, so a replay is refused by
// one conditional insert on every instance; the cleanup job sweeps the rest.
// The secret the server's nonces (§8) are made with, one row every instance
// shares, so a nonce from one instance holds on another.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable("dpop_proof_jtis", (t) => {
    t.string("key", 64).primary();
    t.bigInteger("expires_at").notNullable();
    t.index(["expires_at"], "dpop_proof_jtis_expiry_index");
  });
  await db.schema.createTable("dpop_nonce_secrets", (t) => {
    t.string("name", 32).primary();
    t.string("secret", 128).notNullable();
    t.bigInteger("created_at").notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists("dpop_nonce_secrets");
  await db.schema.dropTableIfExists("dpop_proof_jtis");
}
