import { randomBytes } from "node:crypto";
import pg from "pg";
import { isPostgresUrl } from "../../src/store/db.js";

/** The PostgreSQL server named by DATABASE_URL, if it names one. */
export const POSTGRES_URL = isPostgresUrl(process.env.DATABASE_URL ?? "") ? process.env.DATABASE_URL! : undefined;

/**
 * A fresh, empty database on that server, so a test sees only its own rows
 * and migrations; drop() removes it.
 */
export async function scratchPostgres(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `identity_test_${randomBytes(6).toString("hex")}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
