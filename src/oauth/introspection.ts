import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { findActiveAccessToken } from "./accessTokens.js";

/** RFC 7662 §2.2 response; only `active` is set for an inactive token. */
export interface Introspection {
  active: boolean;
  clientId?: string;
  username?: string;
  tokenType?: string;
  exp?: number;
  iat?: number;
  nbf?: number;
  sub?: string;
  aud?: string[];
  iss?: string;
  scope?: string;
  jti?: string;
  /** How the user signed in (RFC 9068 §2.2.1): from a JWT's claims or an opaque token's row; absent for a client's token. */
  authTime?: number;
  acr?: string;
  amr?: string[];
  /** RFC 8693 §4.1: who acts for the subject of a delegated token. */
  act?: Actor;
  /** RFC 9449 §6.2: the key a DPoP-bound token is bound to, for a JWT and an opaque token alike. */
  cnf?: { jkt: string };
}

/** An `act` claim (RFC 8693 §4.1), nested for a chain of delegations. */
export interface Actor {
  sub: string;
  clientId: string;
  act?: Actor;
}

/** The act claim of a token's payload, read as an Actor; undefined when it has none. */
export function actorOf(claim: unknown): Actor | undefined {
  if (typeof claim !== "object" || claim === null) return undefined;
  const { sub, client_id: clientId, act } = claim as Record<string, unknown>;
  if (typeof sub !== "string") return undefined;
  const inner = actorOf(act);
  return { sub, clientId: typeof clientId === "string" ? clientId : "", ...(inner ? { act: inner } : {}) };
}

/**
 * `issuer` is the iss of an opaque token, which has no payload to carry it;
 * its username is the user's name as the token's own read found it.
 */
export async function introspectToken(store: Store, clock: Clock, token: string, issuer?: string): Promise<Introspection> {
  const found = await findActiveAccessToken(store, clock, token);
  if (!found) return { active: false };
  const { record, claims } = found;
  const username = found.opaque ? found.username : claims.preferred_username;
  return {
    active: true,
    clientId: record.clientId,
    username: username ?? "",
    // RFC 9449 §6.2: a bound token's type is DPoP.
    tokenType: record.dpopJkt ? "DPoP" : "Bearer",
    exp: claims.exp,
    iat: claims.iat,
    nbf: claims.nbf,
    sub: claims.sub,
    aud: claims.aud === undefined ? [] : ([] as string[]).concat(claims.aud),
    iss: found.opaque ? issuer : claims.iss,
    scope: record.scope,
    jti: record.jti,
    ...authenticationOf(claims as Record<string, unknown>),
    ...(claims.act ? { act: actorOf(claims.act) } : {}),
    ...(record.dpopJkt ? { cnf: { jkt: record.dpopJkt } } : {}),
  };
}

/** `auth_time`, `acr` and `amr` of a token's claims, where its minting put them (tokens.ts). */
export function authenticationOf(claims: Record<string, unknown>): Pick<Introspection, "authTime" | "acr" | "amr"> {
  const { auth_time: authTime, acr, amr } = claims;
  return {
    ...(typeof authTime === "number" ? { authTime } : {}),
    ...(typeof acr === "string" ? { acr } : {}),
    ...(Array.isArray(amr) ? { amr: amr.filter((v): v is string => typeof v === "string") } : {}),
  };
}
