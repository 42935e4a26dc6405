import type { ApplicationRecord } from "../shared/model.js";
import { CONSOLE_CLIENT_ID } from "./scopes.js";

/**
 * Whether an application is a public client (RFC 6749 §2.1): one with no
 * secret anybody knows, so the endpoints RFC 7009 §2.1 opens to public
 * clients (revocation) take its client_id alone. Every application made
 * from the config file or the admin API is given a secret and stays
 * confidential, even when it also signs in with PKCE and no secret. The one
 * public client is the console's own (accounts/consoleClient.ts: its stored
 * hash is of a secret nobody ever saw); its client id is reserved, as for
 * the admin scope (scopes.ts).
 */
export function isPublicClient(app: Pick<ApplicationRecord, "clientId">): boolean {
  return app.clientId === CONSOLE_CLIENT_ID;
}
