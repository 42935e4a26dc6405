import type { Db } from "./db.js";

/** What a user allowed one application: scope names and resource URIs. */
export interface ConsentRecord {
  userId: string;
  clientId: string;
  scopes: string[];
  resources: string[];
  grantedAt: number;
}

interface Row {
  user_id: string;
  client_id: string;
  scopes: string;
  resources: string;
  granted_at: number | string;
}

const words = (text: string) => text.split(" ").filter((w) => w !== "");

/**
 * Remembered consents, one per user and application. The contract
 * (test/store/contract/applications.spec.ts, every backend, "consents"):
 * - remember() writes the whole grant in one statement, replacing what was
 *   there (the domain passes the union);
 * - a consent goes with its user or its application.
 */
export class ConsentRepository {
  constructor(private readonly db: Db) {}

  async find(userId: string, clientId: string): Promise<ConsentRecord | undefined> {
    const row = await this.db<Row>("consents").where({ user_id: userId, client_id: clientId }).first();
    return row && { userId: row.user_id, clientId: row.client_id, scopes: words(row.scopes), resources: words(row.resources), grantedAt: Number(row.granted_at) };
  }

  async remember(consent: ConsentRecord): Promise<void> {
    const row = { user_id: consent.userId, client_id: consent.clientId, scopes: consent.scopes.join(" "), resources: consent.resources.join(" "), granted_at: consent.grantedAt };
    await this.db("consents").insert(row).onConflict(["user_id", "client_id"]).merge(["scopes", "resources", "granted_at"]);
  }
}
