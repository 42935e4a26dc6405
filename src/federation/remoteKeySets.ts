import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { UpstreamError, type UpstreamClient } from "./upstream.js";

/** How long a JWK Set read is used before it is read again. */
export const KEY_SET_TTL_MS = 5 * 60_000;
/** An unknown `kid` reads the set again at most this often, so tokens with made-up kids cannot make the service call out on each. */
export const KEY_SET_REREAD_MS = 30_000;
const CACHE_LIMIT = 1000;

/**
 * A JWK Set for jose's createLocalJWKSet, where a key registered as EdDSA
 * also verifies a JWS whose alg says Ed25519 (the fully specified name) and
 * the other way round: the alg member is left off Ed25519 keys.
 */
export function localKeySet(jwks: JSONWebKeySet): JWTVerifyGetKey {
  const keys = jwks.keys.map((key) => (key.alg === "EdDSA" || key.alg === "Ed25519" ? { ...key, alg: undefined } : key));
  return createLocalJWKSet({ keys });
}

interface Entry {
  keys: JWTVerifyGetKey;
  readAt: number;
}

/**
 * JWK Sets published at URLs others chose (a client's jwks_uri, a trusted
 * issuer's), read through the upstream client's outbound rules: https only,
 * public addresses only (checked at connect time), a deadline, a size cap
 * and no redirects. Each set is kept for KEY_SET_TTL_MS; a key it lacks
 * reads it again, at most once per KEY_SET_REREAD_MS. Concurrent reads of one
 * URL share one call.
 */
export class RemoteKeySets {
  private readonly sets = new Map<string, Entry>();
  private readonly reading = new Map<string, Promise<Entry>>();
  /** When a read of each URL last failed: it is not tried again for KEY_SET_REREAD_MS, so requests cannot make the service call a dead URL on each. */
  private readonly failedAt = new Map<string, number>();

  constructor(private readonly upstream: Pick<UpstreamClient, "requestJson" | "clock">) {}

  /**
   * A key resolver for jose's jwtVerify over the set at `url`, re-reading the
   * set once when no key matches. `allowInsecure` (an operator's choice for a
   * set on this machine or network, as a provider's allowInsecureUrls) lifts
   * the https and public-address rules.
   */
  resolver(url: string, allowInsecure = false): JWTVerifyGetKey {
    return async (header, token) => {
      const entry = await this.entry(url, false, allowInsecure);
      try {
        return await entry.keys(header, token);
      } catch (err) {
        if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
        const fresh = await this.entry(url, true, allowInsecure);
        if (fresh === entry) throw err;
        return fresh.keys(header, token);
      }
    };
  }

  private async entry(url: string, keyMissing: boolean, allowInsecure: boolean): Promise<Entry> {
    const now = this.upstream.clock.now();
    const cached = this.sets.get(url);
    if (cached && now - cached.readAt < (keyMissing ? KEY_SET_REREAD_MS : KEY_SET_TTL_MS)) return cached;
    const failed = this.failedAt.get(url);
    if (failed !== undefined && now - failed < KEY_SET_REREAD_MS) throw new UpstreamError("jwks", "could not be read moments ago");
    let read = this.reading.get(url);
    if (!read) {
      read = this.read(url, allowInsecure)
        .catch((err: unknown) => {
          if (this.failedAt.size >= CACHE_LIMIT) this.failedAt.clear();
          this.failedAt.set(url, this.upstream.clock.now());
          throw err;
        })
        .finally(() => this.reading.delete(url));
      this.reading.set(url, read);
    }
    return read;
  }

  private async read(url: string, allowInsecure: boolean): Promise<Entry> {
    if (!allowInsecure && !url.startsWith("https://")) throw new UpstreamError("jwks", "must be an https URL");
    const body = await this.upstream.requestJson("jwks", url, { method: "GET", publicOnly: !allowInsecure });
    if (!Array.isArray(body.keys)) throw new UpstreamError("jwks", "has no keys");
    const entry = { keys: localKeySet(body as unknown as JSONWebKeySet), readAt: this.upstream.clock.now() };
    if (this.sets.size >= CACHE_LIMIT) this.sets.clear();
    this.sets.set(url, entry);
    return entry;
  }
}
