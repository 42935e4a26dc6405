import { decodeJwt, jwtVerify, type JWTPayload } from "jose";
import type { RemoteKeySets } from "../federation/remoteKeySets.js";
import { UpstreamError, type UpstreamClient } from "../federation/upstream.js";
import type { Clock } from "../shared/clock.js";
import { OAuthError } from "./errors.js";

/** A `trustedIssuers` entry of the config file: a platform whose signed tokens workloads present (RFC 7523 §2.1). */
export interface TrustedIssuer {
  name: string;
  /** The assertions' `iss`. */
  issuer: string;
  /** Its JWK Set; when absent, the `jwks_uri` of `<issuer>/.well-known/openid-configuration`. */
  jwksUri?: string;
  /** The `aud` an assertion must carry. */
  audience: string;
  /** The name of the application whose token the workload gets. */
  application: string;
  /** `sub` values let in: exact, or a prefix ending in `*`. */
  subjects: string[];
  /** http and addresses on this machine or network, for a platform there (as a provider's allowInsecureUrls). */
  allowInsecureUrls: boolean;
}

/** Algorithms of a platform's tokens: asymmetric only, never `none` or HMAC (RFC 7518 §3.1; RFC 8725 §3.1). */
export const JWT_BEARER_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];
/** An assertion's iat may be at most this far ahead (clock skew). */
export const MAX_IAT_SKEW_S = 60;
/** The longest remaining life an assertion may have. */
export const MAX_BEARER_LIFETIME_S = 3600;
const DISCOVERY_FAILURE_MS = 30_000;

const FIELDS = ["name", "issuer", "jwksUri", "audience", "application", "subjects", "allowInsecureUrls"];

/** One config entry, checked field by field; throws naming the field. */
export function parseTrustedIssuer(raw: Record<string, unknown>): TrustedIssuer {
  const unknown = Object.keys(raw).find((k) => !FIELDS.includes(k));
  if (unknown) throw new OAuthError("invalid_request", `${unknown}: is not a field of a trusted issuer (${FIELDS.join(", ")})`);
  const text = (field: string, optional = false): string | undefined => {
    const value = raw[field];
    if (value === undefined && optional) return undefined;
    if (typeof value !== "string" || value.length === 0 || value.length > 2048) throw new OAuthError("invalid_request", `${field}: must be a non-empty string`);
    return value;
  };
  const allowInsecureUrls = raw.allowInsecureUrls ?? false;
  if (typeof allowInsecureUrls !== "boolean") throw new OAuthError("invalid_request", "allowInsecureUrls: must be true or false");
  const url = (field: string, optional = false) => {
    const value = text(field, optional);
    if (value === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new OAuthError("invalid_request", `${field}: is not an absolute URL`);
    }
    if (parsed.protocol !== "https:" && !(allowInsecureUrls && parsed.protocol === "http:")) {
      throw new OAuthError("invalid_request", `${field}: must use https (http only with allowInsecureUrls: true)`);
    }
    return value;
  };
  const subjects = raw.subjects;
  if (!Array.isArray(subjects) || subjects.length === 0 || !subjects.every((s) => typeof s === "string" && s.length > 0)) {
    throw new OAuthError("invalid_request", "subjects: must be a non-empty list of subjects (exact, or a prefix ending in *)");
  }
  const jwksUri = url("jwksUri", true);
  return {
    name: text("name")!,
    issuer: url("issuer")!,
    ...(jwksUri ? { jwksUri } : {}),
    audience: text("audience")!,
    application: text("application")!,
    subjects: subjects as string[],
    allowInsecureUrls,
  };
}

/** Whether `sub` is one of the entry's subjects: exact, or under a prefix ending in `*`. */
export function subjectAllowed(subjects: readonly string[], sub: string): boolean {
  return subjects.some((s) => (s.endsWith("*") ? sub.startsWith(s.slice(0, -1)) : s === sub));
}

const refused = (why: string) => new OAuthError("invalid_grant", `the assertion is refused: ${why}`);

/**
 * Checks workload assertions against the trusted issuers (RFC 7523 §3):
 * signature with the issuer's keys (read under the outbound rules, cached,
 * re-read on an unknown kid at most once per 30 s), iss, aud, exp, nbf, an
 * iat present and at most 60 s ahead, at most an hour of remaining life,
 * and a subject the entry lets in. Every failure is invalid_grant.
 */
export class TrustedIssuers {
  private readonly discovered = new Map<string, { jwksUri?: string; failedAt?: number }>();

  constructor(
    private readonly entries: readonly TrustedIssuer[],
    private readonly clock: Clock,
    private readonly keys: Pick<RemoteKeySets, "resolver">,
    private readonly upstream: Pick<UpstreamClient, "requestJson">,
  ) {}

  get configured(): boolean {
    return this.entries.length > 0;
  }

  /** The entry that vouches for `assertion`, and its verified claims. */
  async verify(assertion: string): Promise<{ entry: TrustedIssuer; claims: JWTPayload & { sub: string; exp: number } }> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(assertion);
    } catch {
      throw refused("it is not a JWT");
    }
    const candidates = this.entries.filter((e) => e.issuer === unverified.iss);
    if (candidates.length === 0) throw refused("its issuer is not trusted");
    const nowMs = this.clock.now();
    for (const entry of candidates) {
      let payload: JWTPayload;
      try {
        const jwks = this.keys.resolver(await this.jwksUriOf(entry), entry.allowInsecureUrls);
        ({ payload } = await jwtVerify(assertion, jwks, {
          algorithms: JWT_BEARER_ALGS,
          issuer: entry.issuer,
          audience: entry.audience,
          requiredClaims: ["sub", "exp", "iat"],
          currentDate: new Date(nowMs),
        }));
      } catch (err) {
        if (candidates.length === 1) throw refused(err instanceof UpstreamError ? "the issuer's keys cannot be read" : "its signature or claims do not check out");
        continue;
      }
      const now = Math.floor(nowMs / 1000);
      if (payload.iat! > now + MAX_IAT_SKEW_S) throw refused("it was issued in the future");
      if (payload.exp! - now > MAX_BEARER_LIFETIME_S) throw refused(`it must expire within ${MAX_BEARER_LIFETIME_S} seconds`);
      if (!subjectAllowed(entry.subjects, payload.sub!)) throw refused("its subject is not let in");
      return { entry, claims: payload as JWTPayload & { sub: string; exp: number } };
    }
    throw refused("its signature or claims do not check out");
  }

  /** The entry's jwksUri, or the one its issuer's discovery names (read once, a failure remembered 30 s). */
  private async jwksUriOf(entry: TrustedIssuer): Promise<string> {
    if (entry.jwksUri) return entry.jwksUri;
    const known = this.discovered.get(entry.issuer);
    if (known?.jwksUri) return known.jwksUri;
    if (known?.failedAt !== undefined && this.clock.now() - known.failedAt < DISCOVERY_FAILURE_MS) throw new UpstreamError("discovery", "failed moments ago");
    try {
      const doc = await this.upstream.requestJson("discovery", `${entry.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`, {
        method: "GET",
        publicOnly: !entry.allowInsecureUrls,
      });
      if (typeof doc.jwks_uri !== "string") throw new UpstreamError("discovery", "names no jwks_uri");
      if (!entry.allowInsecureUrls && !doc.jwks_uri.startsWith("https://")) throw new UpstreamError("discovery", "names a jwks_uri that is not https");
      this.discovered.set(entry.issuer, { jwksUri: doc.jwks_uri });
      return doc.jwks_uri;
    } catch (err) {
      this.discovered.set(entry.issuer, { failedAt: this.clock.now() });
      throw err;
    }
  }
}
