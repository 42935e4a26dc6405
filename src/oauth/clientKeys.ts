import type { JSONWebKeySet, JWTVerifyGetKey } from "jose";
import { localKeySet, type RemoteKeySets } from "../federation/remoteKeySets.js";
import type { ApplicationRecord } from "../shared/model.js";

const INLINE_CACHE_LIMIT = 1000;

/**
 * The public keys a client registered (its `jwks`, or the set at its
 * `jwksUri`, read under the outbound rules), as a key resolver for jose.
 * Undefined when it registered none, or its `jwks` cannot be read.
 */
export class ClientKeys {
  /** Inline key sets parsed once, by their JSON text. */
  private readonly inline = new Map<string, JWTVerifyGetKey | undefined>();

  constructor(private readonly remoteKeys: Pick<RemoteKeySets, "resolver">) {}

  of(app: Pick<ApplicationRecord, "jwks" | "jwksUri">): JWTVerifyGetKey | undefined {
    if (app.jwksUri) return this.remoteKeys.resolver(app.jwksUri);
    if (!app.jwks) return undefined;
    if (this.inline.has(app.jwks)) return this.inline.get(app.jwks);
    let keys: JWTVerifyGetKey | undefined;
    try {
      keys = localKeySet(JSON.parse(app.jwks) as JSONWebKeySet);
    } catch {
      keys = undefined;
    }
    if (this.inline.size >= INLINE_CACHE_LIMIT) this.inline.clear();
    this.inline.set(app.jwks, keys);
    return keys;
  }
}
