import { createPrivateKey } from "node:crypto";
import forge from "node-forge";
import type { JWK } from "jose";

const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * A self-signed X.509 certificate around a signing key's public half, for
 * relying parties that only accept keys as certificates.
 */
export function selfSignedCertificate(privateJwk: JWK, kid: string, nowMs: number): string {
  const pem = createPrivateKey({ key: privateJwk as import("node:crypto").JsonWebKey, format: "jwk" })
    .export({ type: "pkcs1", format: "pem" })
    .toString();
  const privateKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(privateKey.n, privateKey.e);
  cert.serialNumber = "01" + Buffer.from(kid.replace(/-/g, "").slice(0, 16), "hex").toString("hex");
  cert.validity.notBefore = new Date(nowMs);
  cert.validity.notAfter = new Date(nowMs + TEN_YEARS_MS);
  const subject = [{ name: "commonName", value: `identity-service signing key ${kid}` }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(privateKey, forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}
