import type { ApplicationRecord, SigningAlg } from "../shared/model.js";
import { DPOP_SIGNING_ALGS } from "./dpop.js";
import { OAuthError } from "./errors.js";
import { PKCE_METHOD } from "./pkce.js";

/**
 * The FAPI 2.0 Security Profile (OpenID FAPI 2.0 Security Profile, final),
 * for an application whose `profile` is `fapi2`: every rule of it that this
 * service enforces, in one place. Saving such an application checks it
 * (accounts/applications.ts); the authorize endpoint, PAR and the token
 * endpoint ask here at run time.
 */
export const FAPI2_PROFILE = "fapi2";

/** §5.3.2.2: "shall issue authorization codes with a maximum lifetime of 60 seconds". */
export const FAPI2_CODE_LIFETIME_SECONDS = 60;

/** §5.4: JWTs are signed with PS256, ES256 or EdDSA (Ed25519) only. */
const FAPI2_SIGNING_ALGS: readonly SigningAlg[] = ["PS256", "ES256", "EdDSA"];
/** §5.3.2.1: the resource owner password credentials grant and the implicit grant (and so the hybrid flow) are refused. */
const FAPI2_REFUSED_GRANTS = ["password", "implicit"];

/** §5.4, as jose names them: what a fapi2 client's own JWTs (client assertions, request objects) may be signed with. */
const FAPI2_JWT_ALGS = ["PS256", "ES256", "EdDSA", "Ed25519"];

export const isFapi2 = (app: Pick<ApplicationRecord, "profile">): boolean => app.profile === FAPI2_PROFILE;

/** One field of a `fapi2` application that the profile does not allow. */
export interface Fapi2Problem {
  field: "tokenEndpointAuthMethod" | "signingAlg" | "grantTypes";
  problem: string;
}

/** What a `fapi2` application, as it would be saved, has that the profile refuses; none for any other profile. */
export function fapi2ApplicationProblems(app: Pick<ApplicationRecord, "profile" | "tokenEndpointAuthMethod" | "signingAlg" | "grantTypes">): Fapi2Problem[] {
  if (!isFapi2(app)) return [];
  const problems: Fapi2Problem[] = [];
  // §5.3.2.1: clients authenticate by MTLS or private_key_jwt; this service has no MTLS.
  if (app.tokenEndpointAuthMethod !== "private_key_jwt") {
    problems.push({ field: "tokenEndpointAuthMethod", problem: `must be private_key_jwt for profile fapi2, not ${app.tokenEndpointAuthMethod}` });
  }
  if (!FAPI2_SIGNING_ALGS.includes(app.signingAlg)) {
    problems.push({ field: "signingAlg", problem: `must be ${FAPI2_SIGNING_ALGS.join(", ")} for profile fapi2, not ${app.signingAlg} (the default)` });
  }
  const refused = app.grantTypes.filter((g) => FAPI2_REFUSED_GRANTS.includes(g));
  if (refused.length > 0) problems.push({ field: "grantTypes", problem: `profile fapi2 refuses the ${refused.join(" and ")} grant` });
  return problems;
}

/**
 * Why a `fapi2` application's authorize request is refused, or undefined.
 * `pushed`: its parameters came through PAR. Both answers are
 * invalid_request (RFC 6749 §4.1.2.1), sent back to the redirect_uri.
 */
export function fapi2AuthorizeProblem(app: Pick<ApplicationRecord, "profile">, request: { codeChallengeMethod?: typeof PKCE_METHOD }, pushed: boolean): OAuthError | undefined {
  if (!isFapi2(app)) return undefined;
  // §5.3.2.2: "shall reject authorization requests sent without [RFC9126]".
  if (!pushed) return new OAuthError("invalid_request", "this client follows the FAPI 2.0 profile: its authorization request must be pushed first (PAR, RFC 9126)");
  // §5.3.2.2: "shall require PKCE [RFC7636] with S256 as the code challenge method".
  if (request.codeChallengeMethod !== PKCE_METHOD) {
    return new OAuthError("invalid_request", "this client follows the FAPI 2.0 profile: the request needs PKCE, code_challenge with code_challenge_method=S256");
  }
  return undefined;
}

/**
 * Whether the application's token requests must carry a DPoP proof, and why:
 * §5.3.2.1 "shall only issue sender-constrained access tokens", by MTLS or
 * DPoP; this service has DPoP (RFC 9449).
 */
export function dpopRequiredBy(app: Pick<ApplicationRecord, "profile" | "dpopBoundAccessTokens">): string | undefined {
  if (isFapi2(app)) return "this client follows the FAPI 2.0 profile: its tokens are sender-constrained, so the token request needs a DPoP proof (RFC 9449)";
  if (app.dpopBoundAccessTokens) return "this application's tokens are DPoP-bound: the token request needs a DPoP proof (RFC 9449)";
  return undefined;
}

/** How long the application's codes live: at most 60 seconds under fapi2 (a shorter configured lifetime still holds). */
export function codeLifetimeSeconds(app: Pick<ApplicationRecord, "profile">, configured: number): number {
  return isFapi2(app) ? Math.min(configured, FAPI2_CODE_LIFETIME_SECONDS) : configured;
}

/** The algorithms the application's own JWTs may use: `algs`, less those §5.4 refuses under fapi2 (RS256). */
export function jwtAlgsFor(app: Pick<ApplicationRecord, "profile">, algs: readonly string[]): string[] {
  return isFapi2(app) ? algs.filter((alg) => FAPI2_JWT_ALGS.includes(alg)) : [...algs];
}

const FAPI2_DPOP_ALGS = DPOP_SIGNING_ALGS.filter((alg) => FAPI2_JWT_ALGS.includes(alg));

/**
 * The algorithms a DPoP proof may use at PAR, the token endpoint or a
 * resource for the application's tokens: under fapi2 those §5.4 allows
 * (never RS256), else undefined, any of DPOP_SIGNING_ALGS.
 */
export const dpopAlgsFor = (app: Pick<ApplicationRecord, "profile">): readonly string[] | undefined => (isFapi2(app) ? FAPI2_DPOP_ALGS : undefined);

/**
 * The `aud` values a client assertion from the application may carry:
 * `accepted` (any of them, in a string or an array), or under fapi2 the
 * issuer alone, as a string: §5.3.2.1 "shall only accept its issuer
 * identifier value ... as a string in the aud claim received in client
 * authentication assertions".
 */
export function assertionAudiences(app: Pick<ApplicationRecord, "profile">, issuer: string, accepted: readonly string[]): { audiences: string[]; issuerStringOnly: boolean } {
  return isFapi2(app) ? { audiences: [issuer], issuerStringOnly: true } : { audiences: [...accepted], issuerStringOnly: false };
}

/**
 * Whether a refresh replaces the application's refresh token. Not under
 * fapi2: §5.3.2.1 allows rotation only where a retry with the previous
 * refresh token succeeds when the client lost the answer, and a token that
 * stays is that, with nothing to lose.
 */
export const refreshTokenRotates = (app: Pick<ApplicationRecord, "profile">): boolean => !isFapi2(app);
