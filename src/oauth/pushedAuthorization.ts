import type { Clock } from "../shared/clock.js";
import type { ApplicationRecord } from "../shared/model.js";
import type { PushedAuthorizationRequestRepository } from "../store/pushedAuthorizationRequests.js";
import type { AuthorizeValidation } from "./authorizeRequest.js";
import { resolveClient, type BasicCredentials, type ClientAuthenticator, type PresentedClient } from "./clientAuth.js";
import type { DPoPProofs, ProofContext } from "./dpop.js";
import { OAuthError } from "./errors.js";
import { dpopAlgsFor, fapi2AuthorizeProblem } from "./fapi2.js";
import { isPublicClient } from "./publicClients.js";
import type { RequestObjects } from "./requestObject.js";
import { randomToken, sha256 } from "./secrets.js";

/** RFC 9126 §2.2: the request_uri's URN prefix. */
export const REQUEST_URI_PREFIX = "urn:ietf:params:oauth:request_uri:";
/** RFC 9126 §2.2 expires_in: long enough for a redirect, short enough to be of no use later. */
export const PUSHED_REQUEST_TTL_SECONDS = 60;
/** A request_uri we issued is the prefix and 43 characters; anything longer is no one's. */
const MAX_REQUEST_URI_LENGTH = REQUEST_URI_PREFIX.length + 64;
/**
 * --pushed-requests-max-per-client: live (unexpired, unused) pushed requests
 * one client may hold, so no client fills the table. A row lives until used
 * or PUSHED_REQUEST_TTL_SECONDS, so a client pushing steadily may push this
 * many per such period, more when its users come back sooner.
 */
export const DEFAULT_PUSHED_REQUESTS_PER_CLIENT = 1000;

/** RFC 9126 §2.2 response. */
export interface PushedRequestAnswer {
  requestUri: string;
  expiresIn: number;
}

export interface PushedAuthorizationDeps {
  clock: Clock;
  repo: Pick<PushedAuthorizationRequestRepository, "insert" | "take">;
  clients: Pick<ClientAuthenticator, "authenticate" | "identify">;
  requestObjects: Pick<RequestObjects, "open">;
  dpop: Pick<DPoPProofs, "verify">;
  /** Live pushed requests one client may hold (DEFAULT_PUSHED_REQUESTS_PER_CLIENT). */
  maxLivePerClient: number;
  /** The authorize endpoint's own check of a set of parameters. */
  validate: (params: ReadonlyMap<string, string>) => Promise<AuthorizeValidation>;
}

/**
 * Pushed authorization requests (RFC 9126). The client authenticates as at
 * the token endpoint (a public client names itself), its parameters (or its
 * request object's, RFC 9101) are checked as the authorize endpoint checks
 * them, and kept, every one, under a random request_uri: a new parameter
 * flows through without a change here. The authorize request that names it
 * takes the row in one conditional DELETE, so it is used once, by that
 * client, before it expires, whichever instance serves it.
 */
export class PushedAuthorizations {
  constructor(private readonly deps: PushedAuthorizationDeps) {}

  /** `dpop`: the push's DPoP header and target, when it sent one (RFC 9449 §10.1). */
  async push(params: ReadonlyMap<string, string>, presented: PresentedClient, basic: BasicCredentials, clientAddress?: string, dpop?: ProofContext): Promise<PushedRequestAnswer> {
    const app = await this.authenticate(presented, basic, clientAddress);
    // RFC 9126 §2.1: a request_uri is what this endpoint answers, never what it takes.
    if (params.has("request_uri")) throw new OAuthError("invalid_request", "request_uri is not allowed in a pushed authorization request");
    const request = params.get("request");
    const pushed = request ? await this.deps.requestObjects.open(app, request) : new Map(params);
    const named = params.get("client_id");
    if (named && named !== app.clientId) throw new OAuthError("invalid_request", "client_id is not the authenticated client");
    pushed.set("client_id", app.clientId);
    if (dpop?.proof !== undefined) await this.bindToProof(pushed, dpop, app);
    // RFC 9126 §2.1: checked now as at the authorize endpoint, so errors reach the client, not the user.
    const validation = await this.deps.validate(pushed);
    if (!validation.ok) throw validation.error;
    // FAPI 2.0 §5.3.2.2: a fapi2 client's missing PKCE is told to the client now, not to the user later.
    const fapi2 = fapi2AuthorizeProblem(validation.app, validation.request, true);
    if (fapi2) throw fapi2;
    const requestUri = `${REQUEST_URI_PREFIX}${randomToken()}`;
    const now = this.deps.clock.now();
    const record = {
      requestUriHash: sha256(requestUri),
      clientId: app.clientId,
      params: JSON.stringify(Object.fromEntries(pushed)),
      expiresAt: now + PUSHED_REQUEST_TTL_SECONDS * 1000,
    };
    if (!(await this.deps.repo.insert(record, this.deps.maxLivePerClient, now))) {
      // RFC 9126 §2.3 names 429 for a client past the requests the server allows in a period; the code is
      // RFC 6749 §4.1.2.1's temporarily_unavailable (with Retry-After): pushes fit again as live ones are used or expire.
      throw new OAuthError("temporarily_unavailable", `too many live pushed requests for this client: at most ${this.deps.maxLivePerClient} at once`, 429);
    }
    return { requestUri, expiresIn: PUSHED_REQUEST_TTL_SECONDS };
  }

  /**
   * The parameters pushed under `requestUri` by `clientId`, removed for good:
   * one caller gets them; a replay, another client or a late one gets
   * invalid_request_uri (RFC 9126 §4). Never a URL to fetch (RFC 9101 §5.2 is not served).
   */
  async take(clientId: string | undefined, requestUri: string): Promise<Map<string, string>> {
    if (!requestUri.startsWith(REQUEST_URI_PREFIX)) {
      throw new OAuthError("request_uri_not_supported", "request_uri is accepted only as returned by the pushed authorization request endpoint");
    }
    if (!clientId) throw new OAuthError("invalid_request", "missing parameter: client_id");
    const found =
      requestUri.length <= MAX_REQUEST_URI_LENGTH ? await this.deps.repo.take(sha256(requestUri), clientId, this.deps.clock.now()) : undefined;
    if (found === undefined) throw new OAuthError("invalid_request_uri", "the request_uri is unknown, used, expired or another client's");
    return new Map(Object.entries(JSON.parse(found) as Record<string, string>));
  }

  /**
   * RFC 9449 §10.1: a DPoP proof sent with the push binds the code to its
   * key, as dpop_jkt does; when both are sent they must name the same key.
   */
  private async bindToProof(pushed: Map<string, string>, dpop: ProofContext, app: ApplicationRecord): Promise<void> {
    const jkt = await this.deps.dpop.verify(dpop, "token", undefined, dpopAlgsFor(app));
    const named = pushed.get("dpop_jkt");
    if (named !== undefined && named !== jkt) throw new OAuthError("invalid_dpop_proof", "dpop_jkt is not the thumbprint of the DPoP proof's key");
    pushed.set("dpop_jkt", jkt);
  }

  /** RFC 9126 §2: the client authenticates by its registered method; a public client by its client_id alone. */
  private async authenticate(presented: PresentedClient, basic: BasicCredentials, clientAddress?: string): Promise<ApplicationRecord> {
    const client = resolveClient(presented, basic);
    const secretOrAssertion = Boolean(client.clientSecret || client.clientAssertion);
    const app = secretOrAssertion
      ? await this.deps.clients.authenticate(client, clientAddress, "pushed_authorization_request")
      : await this.deps.clients.identify(client);
    if (!secretOrAssertion && !isPublicClient(app)) throw new OAuthError("invalid_client", "client authentication failed");
    return app;
  }
}
