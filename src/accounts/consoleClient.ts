import { randomUUID } from "node:crypto";
import type { Clock } from "../shared/clock.js";
import { ADMIN_SCOPE, CONSOLE_CLIENT_ID } from "../oauth/scopes.js";
import { noSecretHash } from "../oauth/secrets.js";
import type { ApplicationRepository } from "../store/applications.js";
import { ConflictError } from "../store/errors.js";
import {
  DEFAULT_ACCESS_TOKEN_STRATEGY,
  DEFAULT_SIGNING_ALG,
  DEFAULT_TOKEN_FORMAT,
  type ApplicationRecord,
} from "../shared/model.js";

/** The name of the console's application; with its client id, reserved (applications.ts). */
export const CONSOLE_APP_NAME = "identity-console";

/** What the /admin page needs to sign in: the console is a public client of this service. */
export interface ConsoleClient {
  clientId: string;
  /** `<issuer>/admin/`, the one redirect URI it has. */
  redirectUri: string;
  /** What the console asks for; only an admin user is granted the admin scope (oauth/scopes.ts). */
  scope: string;
}

export function consoleClientFor(issuer: string): ConsoleClient {
  return {
    clientId: CONSOLE_CLIENT_ID,
    redirectUri: `${issuer.replace(/\/+$/, "")}/admin/`,
    scope: `openid profile ${ADMIN_SCOPE}`,
  };
}

/** Whether an application is the console's, which only the service changes. */
export function isConsoleApplication(app: Pick<ApplicationRecord, "name" | "clientId">): boolean {
  return app.name === CONSOLE_APP_NAME || app.clientId === CONSOLE_CLIENT_ID;
}

/**
 * The fields the service keeps the console's application at, whatever was
 * stored; not its providers, which are a setting (consoleProviders.ts).
 */
function consoleFields(client: ConsoleClient) {
  return {
    name: CONSOLE_APP_NAME,
    clientId: client.clientId,
    redirectUris: [client.redirectUri],
    // A public client (oauth/publicClients.ts): code + PKCE only. No refresh,
    // by choice: the console signs in again through the browser session.
    publicClient: true,
    tokenEndpointAuthMethod: "none" as const,
    jwks: "",
    jwksUri: "",
    clientSecretSealed: "",
    exchangeAudiences: [] as string[],
    allowImpersonation: false,
    requirePushedAuthorizationRequests: false,
    backchannelLogoutUri: "",
    backchannelLogoutSessionRequired: false,
    allowPrivateBackchannelLogoutUri: false,
    grantTypes: ["authorization_code"],
    refreshExpireInHours: 0,
    // Served from the issuer's own origin: no cross-origin calls to allow.
    allowedOrigins: [] as string[],
    // Short-lived JWTs: an admin's token is worth the least to whoever finds it.
    expireInHours: 1,
    tokenFormat: DEFAULT_TOKEN_FORMAT,
    signingAlg: DEFAULT_SIGNING_ALG,
    accessTokenStrategy: DEFAULT_ACCESS_TOKEN_STRATEGY,
  };
}

/**
 * Creates the console's application, or brings it back to what it must be
 * (the redirect URI follows the issuer). Run at every start, in the
 * provisioning lock (app/server.ts), so instances and workers starting
 * together find it made. Says what it did.
 */
export async function ensureConsoleClient(
  repo: ApplicationRepository,
  clock: Clock,
  client: ConsoleClient,
): Promise<"created" | "updated" | "unchanged"> {
  const wanted = consoleFields(client);
  const [byName, byClientId] = await Promise.all([repo.findByName(CONSOLE_APP_NAME), repo.findByClientId(client.clientId)]);
  if (byName && byClientId && byName.id !== byClientId.id) {
    // Rows made before the console existed: which one to keep (the client id is what gets the admin scope) is the operator's call.
    throw new Error(
      `cannot set up the admin console's application: its name ${CONSOLE_APP_NAME} and its client id ${client.clientId} belong to two applications (${byName.name}, ${byClientId.name}); delete or rename one`,
    );
  }
  const current = byName ?? byClientId;
  const now = clock.now();
  if (!current) {
    const app: ApplicationRecord = {
      id: randomUUID(),
      ...wanted,
      providers: [],
      clientSecretHash: noSecretHash(),
      consentRequired: false,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await repo.insert(app);
    } catch (err) {
      if (err instanceof ConflictError) {
        throw new Error(`cannot create the admin console's application: the name or client id ${CONSOLE_APP_NAME} is taken`);
      }
      throw err;
    }
    return "created";
  }
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((v, i) => v === b[i]);
  if (
    current.name === wanted.name &&
    current.clientId === wanted.clientId &&
    same(current.redirectUris, wanted.redirectUris) &&
    same(current.grantTypes, wanted.grantTypes) &&
    current.refreshExpireInHours === wanted.refreshExpireInHours &&
    same(current.allowedOrigins, wanted.allowedOrigins) &&
    current.expireInHours === wanted.expireInHours &&
    current.tokenFormat === wanted.tokenFormat &&
    current.signingAlg === wanted.signingAlg &&
    current.accessTokenStrategy === wanted.accessTokenStrategy &&
    current.publicClient === wanted.publicClient &&
    current.tokenEndpointAuthMethod === wanted.tokenEndpointAuthMethod
  ) {
    return "unchanged";
  }
  // A fresh unknown secret hash too: a row found under the console's name or
  // client id may have been made before, with a secret someone knows.
  // Only the columns that differ are written: an admin's change of its providers meanwhile stays.
  await repo.update({ ...current, ...wanted, clientSecretHash: noSecretHash(), updatedAt: now }, current);
  return "updated";
}
