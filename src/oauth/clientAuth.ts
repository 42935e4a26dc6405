import type { ApplicationRepository } from "../store/applications.js";
import { OAuthError } from "./errors.js";
import { claimedClientId, CLIENT_ASSERTION_TYPE, isJwtAuthMethod, type ClientAssertions, type ClientAuthEndpoint } from "./clientAssertion.js";
import type { ClientThrottle } from "./clientThrottle.js";
import { isPublicClient } from "./publicClients.js";
import { DUMMY_GENERATED_SECRET_HASH, isFastSecretHash, OneCheckAtATime, sha256, verifySecret } from "./secrets.js";
import type { ApplicationRecord } from "../shared/model.js";

/** Client credentials as sent in the request body or message fields. */
export interface PresentedClient {
  clientId?: string;
  clientSecret?: string;
  /** RFC 7523 §2.2: `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` with the assertion below. */
  clientAssertionType?: string;
  clientAssertion?: string;
}

/**
 * Decode `Authorization: Basic` client credentials (RFC 6749 §2.3.1: each
 * half is form-urlencoded before base64). Returns undefined when the header
 * uses another scheme or is absent.
 */
/** Basic credentials: a client_id and its secret. */
export type SecretPair = Readonly<{ clientId: string; clientSecret: string }>;

export function parseBasicAuth(authorization: string | null | undefined): SecretPair | undefined {
  if (!authorization) return undefined;
  const match = /^Basic\s+(.*)$/i.exec(authorization.trim());
  if (!match) return undefined;
  const encoded = match[1] ?? "";
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
    throw new OAuthError("invalid_client", "malformed Basic credentials");
  }
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) throw new OAuthError("invalid_client", "malformed Basic credentials");
  try {
    const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    // Frozen: one request's log line and its authentication share it.
    return Object.freeze({ clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) });
  } catch {
    throw new OAuthError("invalid_client", "malformed Basic credentials");
  }
}

/**
 * A request's Basic credentials, decoded once: none, the client they name,
 * or, when malformed, the error that refuses them where they are used (so
 * that errors found earlier, such as a missing grant_type, still come first).
 */
export type BasicCredentials = SecretPair | OAuthError | undefined;

export function readBasicAuth(authorization: string | null | undefined): BasicCredentials {
  try {
    return parseBasicAuth(authorization);
  } catch (err) {
    if (err instanceof OAuthError) return err;
    throw err;
  }
}

/**
 * Merge body credentials with Basic ones. Sending both is tolerated only when
 * they agree; RFC 6749 §2.3 forbids using more than one method.
 */
export function resolveClient(body: PresentedClient, basic: BasicCredentials): PresentedClient {
  if (basic instanceof OAuthError) throw basic;
  if (body.clientAssertion || body.clientAssertionType) return assertionClient(body, basic);
  if (!basic) return { clientId: body.clientId || undefined, clientSecret: body.clientSecret || undefined };
  const conflicts =
    (body.clientId && body.clientId !== basic.clientId) || (body.clientSecret && body.clientSecret !== basic.clientSecret);
  if (conflicts) throw new OAuthError("invalid_request", "client credentials sent both in the body and in Basic auth differ");
  return basic;
}

/**
 * A client that authenticates with an assertion (RFC 7523 §2.2) and no other
 * method (RFC 6749 §2.3). Its client_id is optional (RFC 7523 §3); without
 * one, the assertion's iss names the client whose keys check it.
 */
function assertionClient(body: PresentedClient, basic: SecretPair | undefined): PresentedClient {
  if (basic || body.clientSecret) throw new OAuthError("invalid_request", "use one client authentication method: a client assertion, or a secret");
  if (body.clientAssertionType !== CLIENT_ASSERTION_TYPE) {
    throw new OAuthError("invalid_client", `client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`);
  }
  if (!body.clientAssertion) throw new OAuthError("invalid_client", "missing parameter: client_assertion");
  const clientId = body.clientId || claimedClientId(body.clientAssertion);
  return { clientId, clientAssertionType: body.clientAssertionType, clientAssertion: body.clientAssertion };
}

const VERIFIED_CACHE_LIMIT = 10_000;

/**
 * Authenticates OAuth clients. A secret the service generated is stored as
 * a SHA-256 and checked for the cost of one; a secret a person chose is
 * stored as scrypt. After one successful scrypt check, the pair (stored
 * hash, SHA-256 of the secret) is remembered so the hot path costs a hash,
 * not an scrypt; changing the secret changes the stored hash, which
 * invalidates the entry.
 *
 * Only an scrypt check costs anything, so only it waits for the throttle:
 * it runs after one failure has been reserved from the client_id's and the
 * address's budgets, and not at all once one is spent. A cheap check (a
 * generated secret, a secret this process already verified, an unknown
 * client_id) runs whatever the budgets say, so a flood of wrong secrets
 * never locks out the client that knows its own; its failures are not
 * counted, as counting one (a database write) would cost more than the
 * check, and a 256-bit secret cannot be guessed anyway. An unknown
 * client_id is checked against a dummy hash of the generated secrets'
 * scheme, so it costs what a known client with a generated secret costs.
 * The application cache answers only known client_ids, so a refusal it
 * answered reads the database too: every refusal costs the query an
 * unknown client_id costs, whatever the database's round trip.
 */
export class ClientAuthenticator {
  private readonly verified = new Set<string>();
  /** Checks under way, so a burst of requests with one new secret costs one scrypt, not one each. */
  private readonly verifying = new Map<string, Promise<boolean>>();
  /** scrypt checks run one at a time per process (secrets.ts says why). */
  private readonly scryptQueue = new OneCheckAtATime();

  constructor(
    private readonly applications: Pick<ApplicationRepository, "findByClientId"> & Partial<Pick<ApplicationRepository, "cachedByClientId">>,
    private readonly verify: (secret: string, hash: string) => Promise<boolean> = verifySecret,
    private readonly throttle?: ClientThrottle,
    /** Checks JWT client assertions; without it, none is accepted. */
    private readonly assertions?: ClientAssertions,
  ) {}

  /**
   * The application of a confidential client whose secret or assertion
   * checks out. `clientAddress` is where the request came from, for the
   * per-address budget; `endpoint` is where it authenticates, an audience an
   * assertion may name.
   */
  async authenticate(client: PresentedClient, clientAddress?: string, endpoint: ClientAuthEndpoint = "token"): Promise<ApplicationRecord> {
    if (!client.clientId) throw new OAuthError("invalid_client", "client authentication failed: no client_id");
    const clientId = client.clientId;
    if (client.clientAssertion) {
      const assertion = client.clientAssertion;
      return this.refusedInOneQuery(clientId, (app) => this.checkAssertion(app, clientId, assertion, clientAddress, endpoint));
    }
    return this.refusedInOneQuery(clientId, (app) => this.checkSecret(app, clientId, client.clientSecret, clientAddress));
  }

  /**
   * A client assertion costs one signature check, so it runs whatever the
   * budgets hold, but only once the store says neither the client_id nor the
   * address is locked; a failed one is counted against both, as a wrong
   * chosen secret is.
   */
  private async checkAssertion(
    app: ApplicationRecord | undefined,
    clientId: string,
    assertion: string,
    clientAddress: string | undefined,
    endpoint: ClientAuthEndpoint,
  ): Promise<ApplicationRecord> {
    await this.throttle?.refuseIfLocked(clientId, clientAddress);
    try {
      if (!app || !this.assertions) throw new OAuthError("invalid_client", "client authentication failed");
      await this.assertions.verify(app, assertion, endpoint);
      return app;
    } catch (err) {
      await this.throttle?.countFailure(clientId, clientAddress);
      throw err;
    }
  }

  private async checkSecret(app: ApplicationRecord | undefined, clientId: string, secret: string | undefined, clientAddress: string | undefined): Promise<ApplicationRecord> {
    if (!secret) throw new OAuthError("invalid_client", "client authentication failed");
    // OIDC Core §9: a client registered for a JWT method proves itself with an assertion only.
    if (app && isJwtAuthMethod(app.tokenEndpointAuthMethod)) app = undefined;
    const storedHash = app?.clientSecretHash ?? DUMMY_GENERATED_SECRET_HASH;
    const cacheKey = `${storedHash}\u0000${sha256(secret)}`;

    if (isFastSecretHash(storedHash) || this.verified.has(cacheKey)) {
      if (app && (this.verified.has(cacheKey) || (await this.verify(secret, storedHash)))) return app;
      throw new OAuthError("invalid_client", "client authentication failed");
    }

    // A lock this process saw moments ago is answered here, without a database write or a wait.
    this.throttle?.refuseIfKnownLocked(clientId, clientAddress);
    if (!(await this.secretMatches(cacheKey, secret, storedHash, clientId, clientAddress))) {
      throw new OAuthError("invalid_client", "client authentication failed");
    }
    return app!;
  }

  /**
   * The application named by client_id, for public clients (PKCE) that send
   * no secret. No secret is checked, for a known id or an unknown one alike,
   * so both answer in the time of one lookup; what proves a public client is
   * its code_verifier, checked with the code.
   */
  async identify(client: PresentedClient): Promise<ApplicationRecord> {
    if (!client.clientId) throw new OAuthError("invalid_client", "client authentication failed: no client_id");
    const app = await this.applications.findByClientId(client.clientId);
    // OIDC Core §9: a client registered for a JWT method must send its assertion.
    if (!app || isJwtAuthMethod(app.tokenEndpointAuthMethod)) throw new OAuthError("invalid_client", "client authentication failed");
    return app;
  }

  /**
   * For revocation (RFC 7009 §2.1): a client that sends a secret is
   * authenticated as anywhere; one that sends none is taken on its client_id
   * only if it is a public client (publicClients.ts). A confidential client
   * without its secret is refused as a wrong secret would be, after the same
   * one lookup an unknown client_id costs.
   */
  async authenticateOrPublic(client: PresentedClient, clientAddress?: string): Promise<ApplicationRecord> {
    if (client.clientSecret || client.clientAssertion) return this.authenticate(client, clientAddress, "revocation");
    if (!client.clientId) throw new OAuthError("invalid_client", "client authentication failed: no client_id");
    return this.refusedInOneQuery(client.clientId, async (app) => {
      if (!app || !isPublicClient(app)) throw new OAuthError("invalid_client", "client authentication failed");
      return app;
    });
  }

  /**
   * `decide` on the application of `clientId`, from the cache or the
   * database. A refusal of one the cache answered reads the database before
   * it is thrown, as looking up an unknown client_id does: how long a
   * refusal takes must not say whether the client_id exists.
   */
  private async refusedInOneQuery(clientId: string, decide: (app: ApplicationRecord | undefined) => Promise<ApplicationRecord>): Promise<ApplicationRecord> {
    const cached = this.applications.cachedByClientId?.(clientId);
    const app = cached ?? (await this.applications.findByClientId(clientId));
    try {
      return await decide(app);
    } catch (err) {
      // Its own failure would hide the refusal; the refusal is what the caller needs.
      if (cached) await this.applications.findByClientId(clientId, true).catch(() => undefined);
      throw err;
    }
  }

  /**
   * One scrypt check, in the queue: the failure is reserved when its turn
   * comes (so reservations reach the store one at a time too, and those
   * behind a lock see it), and given back if the secret matches. Requests
   * with the same secret at the same time share the check, and its one
   * reservation.
   */
  private async secretMatches(cacheKey: string, secret: string, storedHash: string, clientId: string, address: string | undefined): Promise<boolean> {
    let check = this.verifying.get(cacheKey);
    if (!check) {
      check = this.scryptQueue
        .run(async () => {
          const reservation = await this.throttle?.reserve(clientId, address);
          const matches = await this.verify(secret, storedHash);
          if (matches && reservation) await this.throttle!.refund(reservation);
          return matches;
        })
        .finally(() => this.verifying.delete(cacheKey));
      this.verifying.set(cacheKey, check);
    }
    if (!(await check)) return false;
    if (this.verified.size >= VERIFIED_CACHE_LIMIT) this.verified.clear();
    this.verified.add(cacheKey);
    return true;
  }
}
