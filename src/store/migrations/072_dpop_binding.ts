import type { Knex } from "knex";

// DPoP (RFC 9449; oauth/dpop.ts): the JWK SHA-256 thumbprint (RFC 7638) a
// token is bound to, on access tokens (an opaque one has no payload to carry
// cnf.jkt), refresh tokens (a public client's, §5), and codes (dpop_jkt at
// authorize, §10). An application may refuse token requests without a proof.
// Every row made before is unbound, as it was.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable("applications", (t) => {
    t.boolean("dpop_bound_access_tokens").notNullable().defaultTo(false);
  });
  for (const table of ["access_tokens", "refresh_tokens", "authorization_codes"]) {
    await db.schema.alterTable(table, (t) => {
      t.string("dpop_jkt", 64).nullable();
    });
  }
}

export async function down(db: Knex): Promise<void> {
  for (const table of ["access_tokens", "refresh_tokens", "authorization_codes"]) {
    await db.schema.alterTable(table, (t) => {
      t.dropColumn("dpop_jkt");
    });
  }
  await db.schema.alterTable("applications", (t) => {
    t.dropColumn("dpop_bound_access_tokens");
  });
}
