import type { Clock } from "../shared/clock.js";
import type { SingleUseKeyRepository } from "../store/singleUseKeys.js";
import { PROOF_ALGORITHMS, ProofFormatError, ProofKeys } from "./dpopKeys.js";
import type { DPoPNonces } from "./dpopNonces.js";
import { OAuthError } from "./errors.js";
import { sha256 } from "./secrets.js";

/**
 * The algorithms DPoP proofs may be signed with (RFC 9449 §4.2: asymmetric
 * only, never `none` or a MAC); discovery lists them (§5.1). Ed25519 is
 * EdDSA's fully specified name.
 */
export const DPOP_SIGNING_ALGS: readonly string[] = Object.keys(PROOF_ALGORITHMS);

/** `--dpop-nonce`: no server nonces, nonces offered in answers, or nonces required in every proof (RFC 9449 §8). */
export const DPOP_NONCE_MODES = ["off", "offer", "required"] as const;
export type DPoPNonceMode = (typeof DPOP_NONCE_MODES)[number];

/**
 * How old a proof's `iat` may be (RFC 9449 §11.1): long enough for a client
 * that signs just before sending over a slow network, short enough that the
 * jti of every accepted proof is kept only this long.
 */
export const DPOP_IAT_WINDOW_SECONDS = 60;
/** How far ahead of our clock a proof's `iat` may be: the client's clock may run fast. */
export const DPOP_CLOCK_SKEW_SECONDS = 10;

const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;

/** A request's DPoP header and what its proof must say of the request (RFC 9449 §4.2). */
export interface ProofContext {
  /** The DPoP header; undefined when the request sent none. */
  proof: string | undefined;
  /** The request's method: `POST` for every RPC. */
  htm: string;
  /** The issuer's URL and the request's path: `<issuer>/identity.v1.<Service>/<Method>` for an RPC. */
  htu: string;
}

/** How a call presented its access token: `Authorization: Bearer` (or a parameter) or `Authorization: DPoP` with a proof. */
export interface PresentedToken {
  token: string | undefined;
  scheme: "Bearer" | "DPoP";
  /** The request's proof and target; present for the DPoP scheme. */
  dpop?: ProofContext;
}

/** Where a proof is checked: the token endpoint answers 400 (§5), a protected resource 401 with a DPoP challenge (§7.1). */
export type ProofSite = "token" | "resource";

/** What a protected resource's refusal of a DPoP presentation carries: a DPoP challenge naming the proof algorithms (RFC 9449 §7.1). */
export const DPOP_CHALLENGE = { challenge: "DPoP" as const, algs: DPOP_SIGNING_ALGS };

/** A refusal of a proof, as the site it was presented at answers it. */
export function proofError(site: ProofSite, code: "invalid_dpop_proof" | "use_dpop_nonce" | "invalid_token", description: string, dpopNonce?: string): OAuthError {
  const answer = { ...(site === "resource" ? DPOP_CHALLENGE : {}), ...(dpopNonce ? { dpopNonce } : {}) };
  return new OAuthError(code, description, site === "resource" || code === "invalid_token" ? 401 : undefined, answer);
}

/**
 * Checks DPoP proofs (RFC 9449 §4.3): one compact JWT of type `dpop+jwt`,
 * signed with an allowed asymmetric algorithm by the public key in its own
 * `jwk` header; `htm` and `htu` naming this request; a fresh `iat`; the
 * server's nonce where nonces are in use; `ath` when it goes with an access
 * token; and a `jti` never accepted before, recorded in the store by one
 * conditional insert, so a replay is refused on every instance. Its answer
 * is the key's JWK SHA-256 thumbprint (RFC 7638), which tokens are bound to.
 */
export class DPoPProofs {
  private readonly keys = new ProofKeys();

  constructor(
    private readonly jtis: Pick<SingleUseKeyRepository, "useOnce">,
    private readonly clock: Clock,
    /** Undefined for `--dpop-nonce off`. */
    private readonly nonces: DPoPNonces | undefined,
    readonly nonceMode: DPoPNonceMode = "off",
  ) {}

  /** A fresh nonce for an answer to carry (the DPoP-Nonce header), unless nonces are off. */
  nonce(): string | undefined {
    return this.nonces?.current();
  }

  /**
   * The thumbprint of the key that signed `context.proof`, once the proof is
   * checked and its jti recorded; `accessToken`, when the proof goes with
   * one, must be its `ath` (§4.3 check 12); `algorithms`, when given, are the
   * only ones of DPOP_SIGNING_ALGS it may be signed with (§4.3 check 5: those
   * "supported by the application"). Throws invalid_dpop_proof or
   * use_dpop_nonce, answered as `site` answers.
   */
  async verify(context: ProofContext, site: ProofSite, accessToken?: string, algorithms?: readonly string[]): Promise<string> {
    const refuse = (why: string) => proofError(site, "invalid_dpop_proof", why);
    const proof = context.proof;
    if (proof === undefined) throw refuse("a DPoP proof is required: send it in the DPoP header");
    // §4.3 check 1: one header, one JWT (two headers arrive joined by a comma).
    if (proof.length > MAX_PROOF_LENGTH || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(proof)) {
      throw refuse("the DPoP header must hold exactly one compact JWT");
    }
    let jkt: string;
    let payload: Record<string, unknown>;
    try {
      ({ jkt, payload } = this.keys.verify(proof, algorithms));
    } catch (err) {
      if (err instanceof ProofFormatError) throw refuse(err.message);
      throw err;
    }
    this.checkClaims(payload, context, site, accessToken);
    // §11.1: used once. Kept until the iat window ends, after which the proof is refused as stale anyway.
    const expiresAt = ((payload.iat as number) + DPOP_IAT_WINDOW_SECONDS + DPOP_CLOCK_SKEW_SECONDS) * 1000;
    if (!(await this.jtis.useOnce(sha256(`${jkt}\u0000${payload.jti}`), expiresAt, this.clock.now()))) {
      throw refuse("the DPoP proof was used before");
    }
    return jkt;
  }

  /** RFC 9449 §4.3 checks 3 and 8-12: the claims say what this request is, now. */
  private checkClaims(payload: Record<string, unknown>, context: ProofContext, site: ProofSite, accessToken: string | undefined): void {
    const refuse = (why: string) => proofError(site, "invalid_dpop_proof", why);
    const { jti, htm, htu, iat, ath, nonce } = payload;
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) throw refuse("the DPoP proof needs a jti of 1-256 characters");
    if (typeof htm !== "string" || htm !== context.htm) throw refuse(`the DPoP proof's htm must be ${context.htm}`);
    if (typeof htu !== "string" || !sameTarget(htu, context.htu)) throw refuse(`the DPoP proof's htu must be ${context.htu}`);
    if (typeof iat !== "number" || !Number.isFinite(iat)) throw refuse("the DPoP proof needs an iat");
    // §8: where nonces are in use, a missing or stale one is answered with a fresh one to retry with.
    if (this.nonces) {
      const askAgain = (why: string) => proofError(site, "use_dpop_nonce", why, this.nonces!.current());
      if (nonce === undefined && this.nonceMode === "required") throw askAgain("the DPoP proof must carry the server's nonce (the DPoP-Nonce header)");
      if (nonce !== undefined && (typeof nonce !== "string" || !this.nonces.isFresh(nonce))) throw askAgain("the DPoP proof's nonce is not a fresh one of this server");
    }
    const now = this.clock.now() / 1000;
    if (iat < now - DPOP_IAT_WINDOW_SECONDS || iat > now + DPOP_CLOCK_SKEW_SECONDS) {
      const why = `the DPoP proof's iat must be within ${DPOP_IAT_WINDOW_SECONDS} seconds of now`;
      // §11.1: with nonces in use, a fresh nonce lets the client make a proof that is fresh too.
      throw this.nonces ? proofError(site, "use_dpop_nonce", why, this.nonces.current()) : refuse(why);
    }
    // §4.3 check 12 (§7.1): the proof is for this very access token.
    if (accessToken !== undefined && ath !== sha256(accessToken)) throw refuse("the DPoP proof's ath is not the hash of this access token");
  }
}

/** RFC 9449 §4.3 check 9: the same URI without its query and fragment, scheme and host compared as URLs compare them. */
function sameTarget(htu: string, expected: string): boolean {
  const target = targetOf(htu);
  return target !== undefined && target === targetOf(expected);
}

function targetOf(uri: string): string | undefined {
  try {
    const url = new URL(uri);
    return `${url.origin}${url.pathname}`;
  } catch {
    return undefined;
  }
}
