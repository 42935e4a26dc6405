import type { Db } from "./db.js";

/** One round trip to an external provider, waiting for its return to /callback. */
export interface FederationStateRecord {
  /** SHA-256 of the state sent to the provider. */
  stateHash: string;
  provider: string;
  /** SHA-256 of what the starter holds: the browser's CSRF token or an RPC caller's login secret. */
  bindingHash: string;
  /** The pending authorize request a browser sign-in finishes; null when begun over RPC. */
  authorizationRequestId: string | null;
  /** The PKCE code_verifier sent at the token exchange; null without PKCE. */
  codeVerifier?: string | null;
  createdAt: number;
  expiresAt: number;
}

/**
 * The contract (test/store/contract/federation.spec.ts, every backend, "federation states"):
 * - compare-and-set: take() deletes the row; exactly one of any number of
 *   concurrent callers gets true, so a state is used once ("lets exactly one
 *   of 50 concurrent takes of one state win");
 * - undefined: findByHash of an unknown hash ("round-trips by hash, with or
 *   without a pending request");
 * - expired states are swept ("cleanup of expired rows" › "deletes expired
 *   access tokens, sessions and federation states, and keeps live ones").
 */
export class FederationStateRepository {
  constructor(private readonly db: Db) {}

  async insert(s: FederationStateRecord): Promise<void> {
    await this.db("federation_states").insert({
      state_hash: s.stateHash,
      provider: s.provider,
      binding_hash: s.bindingHash,
      authorization_request_id: s.authorizationRequestId,
      code_verifier: s.codeVerifier ?? null,
      created_at: s.createdAt,
      expires_at: s.expiresAt,
    });
  }

  async findByHash(stateHash: string): Promise<FederationStateRecord | undefined> {
    const r = await this.db("federation_states").where({ state_hash: stateHash }).first();
    if (!r) return undefined;
    return {
      stateHash: r.state_hash,
      provider: r.provider,
      bindingHash: r.binding_hash,
      authorizationRequestId: r.authorization_request_id ?? null,
      ...(r.code_verifier ? { codeVerifier: String(r.code_verifier) } : {}),
      createdAt: Number(r.created_at),
      expiresAt: Number(r.expires_at),
    };
  }

  /** Delete the state; true for exactly one caller, so it is used once. */
  async take(stateHash: string): Promise<boolean> {
    return (await this.db("federation_states").where({ state_hash: stateHash }).delete()) === 1;
  }
}
