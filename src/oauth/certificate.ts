import { createPrivateKey, createPublicKey, sign, type JsonWebKey, type KeyObject } from "node:crypto";
import forge from "node-forge";
import type { JWK } from "jose";

const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * A self-signed X.509 certificate around a signing key's public half, for
 * relying parties that only accept keys as certificates. RSA keys (RS256,
 * PS256) go through node-forge's certificate builder, which knows only RSA
 * and signs sha256WithRSAEncryption. ES256 and EdDSA keys, which forge
 * cannot put in a certificate, get one built here: forge's ASN.1 DER
 * encoder for the structure (RFC 5280 §4.1), Node's crypto for the
 * signature (ecdsa-with-SHA256, RFC 5758; Ed25519, RFC 8410).
 */
export function selfSignedCertificate(privateJwk: JWK, kid: string, nowMs: number): string {
  const key = createPrivateKey({ key: privateJwk as JsonWebKey, format: "jwk" });
  const subject = `identity-service signing key ${kid}`;
  const serialHex = "01" + Buffer.from(kid.replace(/-/g, "").slice(0, 16), "hex").toString("hex");
  if (key.asymmetricKeyType === "rsa") return rsaCertificate(key, subject, serialHex, nowMs);
  return builtCertificate(key, subject, serialHex, nowMs);
}

function rsaCertificate(key: KeyObject, commonName: string, serialHex: string, nowMs: number): string {
  const pem = key.export({ type: "pkcs1", format: "pem" }).toString();
  const privateKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(privateKey.n, privateKey.e);
  cert.serialNumber = serialHex;
  cert.validity.notBefore = new Date(nowMs);
  cert.validity.notAfter = new Date(nowMs + TEN_YEARS_MS);
  const subject = [{ name: "commonName", value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(privateKey, forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

/** Signature algorithm OIDs, by key type: no parameters for either. */
const SIGNATURE_OIDS: Record<string, { oid: string; digest: string | null }> = {
  ec: { oid: "1.2.840.10045.4.3.2", digest: "sha256" }, // ecdsa-with-SHA256
  ed25519: { oid: "1.3.101.112", digest: null }, // Ed25519
};

function builtCertificate(key: KeyObject, commonName: string, serialHex: string, nowMs: number): string {
  const scheme = SIGNATURE_OIDS[key.asymmetricKeyType ?? ""];
  if (!scheme) throw new Error(`no certificate for ${key.asymmetricKeyType ?? "unknown"} keys`);
  const { asn1 } = forge;
  const U = asn1.Class.UNIVERSAL;
  const seq = (...items: forge.asn1.Asn1[]) => asn1.create(U, asn1.Type.SEQUENCE, true, items);
  const der = (bytes: Buffer) => asn1.fromDer(forge.util.createBuffer(bytes.toString("binary")));
  const algorithm = seq(asn1.create(U, asn1.Type.OID, false, asn1.oidToDer(scheme.oid).getBytes()));
  const name = seq(
    asn1.create(U, asn1.Type.SET, true, [
      seq(
        asn1.create(U, asn1.Type.OID, false, asn1.oidToDer("2.5.4.3").getBytes()),
        asn1.create(U, asn1.Type.UTF8, false, forge.util.encodeUtf8(commonName)),
      ),
    ]),
  );
  const spki = createPublicKey(key).export({ type: "spki", format: "der" });
  const tbs = seq(
    asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [asn1.create(U, asn1.Type.INTEGER, false, asn1.integerToDer(2).getBytes())]),
    asn1.create(U, asn1.Type.INTEGER, false, forge.util.hexToBytes(serialHex)),
    algorithm,
    name,
    seq(
      asn1.create(U, asn1.Type.UTCTIME, false, asn1.dateToUtcTime(new Date(nowMs))),
      asn1.create(U, asn1.Type.UTCTIME, false, asn1.dateToUtcTime(new Date(nowMs + TEN_YEARS_MS))),
    ),
    name,
    der(spki),
  );
  const tbsDer = Buffer.from(asn1.toDer(tbs).getBytes(), "binary");
  const signature = sign(scheme.digest, tbsDer, { key, dsaEncoding: "der" });
  // The same AlgorithmIdentifier in and after tbsCertificate (RFC 5280 §4.1.1.2), as `name` serves as subject and issuer.
  const certificate = seq(tbs, algorithm, asn1.create(U, asn1.Type.BITSTRING, false, "\x00" + signature.toString("binary")));
  return forge.pem.encode({ type: "CERTIFICATE", body: asn1.toDer(certificate).getBytes() }, { maxline: 64 });
}
