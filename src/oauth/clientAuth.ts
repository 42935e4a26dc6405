import type { ApplicationRepository } from "../store/applications.js";
import { OAuthError } from "./errors.js";
import { DUMMY_SECRET_HASH, sha256, verifySecret } from "./secrets.js";
import type { ApplicationRecord } from "../shared/model.js";

/** Client credentials as sent in the request body or message fields. */
export interface PresentedClient {
  clientId?: string;
  clientSecret?: string;
}

/**
 * Decode `Authorization: Basic` client credentials (RFC 6749 §2.3.1: each
 * half is form-urlencoded before base64). Returns undefined when the header
 * uses another scheme or is absent.
 */
export function parseBasicAuth(authorization: string | null | undefined): Readonly<Required<PresentedClient>> | undefined {
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
export type BasicCredentials = Readonly<Required<PresentedClient>> | OAuthError | undefined;

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
  if (!basic) return { clientId: body.clientId || undefined, clientSecret: body.clientSecret || undefined };
  const conflicts =
    (body.clientId && body.clientId !== basic.clientId) || (body.clientSecret && body.clientSecret !== basic.clientSecret);
  if (conflicts) throw new OAuthError("invalid_request", "client credentials sent both in the body and in Basic auth differ");
  return basic;
}

const VERIFIED_CACHE_LIMIT = 10_000;

/**
 * Authenticates OAuth clients. Client secrets are stored as scrypt hashes;
 * after one successful check, the pair (stored hash, SHA-256 of the secret)
 * is remembered so the hot path costs a hash, not an scrypt. Changing the
 * secret changes the stored hash, which invalidates the entry.
 */
export class ClientAuthenticator {
  private readonly verified = new Set<string>();
  /** Checks under way, so a burst of requests with one new secret costs one scrypt, not one each. */
  private readonly verifying = new Map<string, Promise<boolean>>();

  constructor(
    private readonly applications: Pick<ApplicationRepository, "findByClientId">,
    private readonly verify: (secret: string, hash: string) => Promise<boolean> = verifySecret,
  ) {}

  /** The application of a confidential client whose secret checks out. */
  async authenticate(client: PresentedClient): Promise<ApplicationRecord> {
    const app = await this.identify(client);
    if (!client.clientSecret) throw new OAuthError("invalid_client", "client authentication failed");
    if (!(await this.secretMatches(app, client.clientSecret))) {
      throw new OAuthError("invalid_client", "client authentication failed");
    }
    return app;
  }

  /** The application named by client_id, for public clients (PKCE) that send no secret. */
  async identify(client: PresentedClient): Promise<ApplicationRecord> {
    if (!client.clientId) throw new OAuthError("invalid_client", "client authentication failed: no client_id");
    const app = await this.applications.findByClientId(client.clientId);
    if (!app) {
      // Spend the same time as a real check, so unknown ids are not revealed.
      await verifySecret(client.clientSecret ?? "", DUMMY_SECRET_HASH);
      throw new OAuthError("invalid_client", "client authentication failed");
    }
    return app;
  }

  async secretMatches(app: ApplicationRecord, secret: string): Promise<boolean> {
    const cacheKey = `${app.clientSecretHash}\u0000${sha256(secret)}`;
    if (this.verified.has(cacheKey)) return true;
    let check = this.verifying.get(cacheKey);
    if (!check) {
      check = this.verify(secret, app.clientSecretHash).finally(() => this.verifying.delete(cacheKey));
      this.verifying.set(cacheKey, check);
    }
    if (!(await check)) return false;
    if (this.verified.size >= VERIFIED_CACHE_LIMIT) this.verified.clear();
    this.verified.add(cacheKey);
    return true;
  }
}
