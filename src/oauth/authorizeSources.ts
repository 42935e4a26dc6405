import type { ApplicationRepository } from "../store/applications.js";
import { OAuthError } from "./errors.js";
import type { PushedAuthorizations } from "./pushedAuthorization.js";
import type { RequestObjects } from "./requestObject.js";

/** The parameters an authorize request stands for, and whether they came through PAR. */
export interface AuthorizeParameters {
  params: ReadonlyMap<string, string>;
  pushed: boolean;
}

/**
 * Where an authorize request's parameters come from: a pushed request
 * (`request_uri`, RFC 9126 §4), a signed request object (`request`,
 * RFC 9101 §5), or the query or form itself. Throws the OAuthError that
 * refuses the request.
 */
export class AuthorizeSources {
  constructor(
    private readonly apps: Pick<ApplicationRepository, "findByClientId">,
    private readonly requestObjects: Pick<RequestObjects, "open">,
    private readonly pushedRequests: Pick<PushedAuthorizations, "take">,
  ) {}

  async resolve(params: ReadonlyMap<string, string>): Promise<AuthorizeParameters> {
    const requestUri = params.get("request_uri") || undefined;
    const request = params.get("request") || undefined;
    if (requestUri && request) throw new OAuthError("invalid_request", "send request or request_uri, not both");
    const clientId = params.get("client_id") || undefined;
    // RFC 9126 §4: the client_id beside it must be the one that pushed it; the pushed parameters are the only ones used.
    if (requestUri) return { params: await this.pushedRequests.take(clientId, requestUri), pushed: true };
    if (!request) return { params, pushed: false };
    // RFC 9101 §5: client_id is sent beside the request object, and names whose keys verify it.
    if (!clientId) throw new OAuthError("invalid_request", "missing parameter: client_id");
    const app = await this.apps.findByClientId(clientId);
    if (!app) throw new OAuthError("invalid_client", "unknown client_id");
    return { params: await this.requestObjects.open(app, request), pushed: false };
  }
}
