import type { AuthorizeRequest } from "./authorizeRequest.js";
import { applicationRecord, type ApplicationRecord } from "../shared/model.js";

/**
 * Sign-ins that the service's own pages start (the account page, the device
 * page), through the same login form and second-factor step as an
 * application's. Such a request ends at a path of ours, with a session and
 * no code: `returnPath` is set only here, never from a request's
 * parameters, and the request is kept server-side like any pending one.
 */

/** The account page's own client id. It has a space, which no application's may have (accounts/applications.ts). */
export const ACCOUNT_PAGE_CLIENT_ID = "identity account";
export const ACCOUNT_PAGE_PATH = "/account";

/**
 * The account page as the sign-in pages see an application: no stored row,
 * `mfa: optional` (a user with a factor is asked for it), nothing issued.
 */
export function accountPageApplication(): ApplicationRecord {
  return applicationRecord({
    id: ACCOUNT_PAGE_CLIENT_ID,
    name: "your account",
    clientId: ACCOUNT_PAGE_CLIENT_ID,
    clientSecretHash: "",
    redirectUris: [],
    grantTypes: [],
    expireInHours: 0,
    refreshExpireInHours: 0,
    publicClient: true,
    tokenEndpointAuthMethod: "none",
    mfa: "optional",
    createdAt: 0,
    updatedAt: 0,
  });
}

/** A sign-in for one of our pages, under `clientId`'s second-factor policy, ending at `returnPath`. */
export function ownPageRequest(clientId: string, returnPath: string): AuthorizeRequest {
  return { clientId, redirectUri: "", responseType: "code", responseMode: "query", scopes: ["openid"], state: "", prompt: [], returnPath };
}
