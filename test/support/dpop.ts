import { createHash, randomUUID } from "node:crypto";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";

/** A DPoP key pair as a client holds it, with its public JWK and thumbprint (RFC 7638). */
export interface DPoPKey {
  keyPair: { publicKey: CryptoKey; privateKey: CryptoKey };
  alg: string;
  publicJwk: JWK;
  jkt: string;
}

/** A fresh extractable-public key pair (ES256 unless told). */
export async function dpopKey(alg = "ES256"): Promise<DPoPKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { keyPair: { publicKey, privateKey }, alg, publicJwk, jkt: await calculateJwkThumbprint(publicJwk, "sha256") };
}

/** What a hand-made proof says; anything may be overridden, or dropped with undefined, to make a bad one. */
export interface ProofClaims {
  htm: string;
  htu: string;
  accessToken?: string;
  nonce?: string;
  iat?: number;
  jti?: string;
  ath?: string;
  [claim: string]: unknown;
}

/** A DPoP proof (RFC 9449 §4.2) signed by `key`, made by hand so that tests can bend any part of it. */
export async function dpopProof(key: DPoPKey, claims: ProofClaims, header: Record<string, unknown> = {}): Promise<string> {
  const { accessToken, ...rest } = claims;
  const payload: Record<string, unknown> = {
    jti: randomUUID(),
    iat: Math.floor(Date.now() / 1000),
    ...(accessToken ? { ath: createHash("sha256").update(accessToken).digest("base64url") } : {}),
    ...rest,
  };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
  return new SignJWT(payload)
    .setProtectedHeader({ typ: "dpop+jwt", alg: key.alg, jwk: key.publicJwk, ...header } as never)
    .sign(key.keyPair.privateKey);
}
