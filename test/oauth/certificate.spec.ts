import assert from "node:assert/strict";
import { createPublicKey, X509Certificate } from "node:crypto";
import { exportJWK } from "jose";
import { selfSignedCertificate } from "../../src/oauth/certificate.js";
import { generateSigningKeyPair } from "../../src/oauth/keys.js";
import { SIGNING_ALGS } from "../../src/shared/model.js";

describe("selfSignedCertificate: a certificate for every signing algorithm's key", () => {
  for (const alg of SIGNING_ALGS) {
    it(`wraps a ${alg} key in a self-signed X.509 certificate that verifies`, async () => {
      const { privateKey, publicKey } = await generateSigningKeyPair(alg);
      const kid = "0b6e0f4c-1b1e-4b8e-9c59-3f4f6c1a2b3c";
      const now = Date.UTC(2026, 10, 25);
      const cert = new X509Certificate(selfSignedCertificate(await exportJWK(privateKey), kid, now));
      assert.ok(cert.verify(cert.publicKey), "signed by its own key");
      assert.ok(cert.publicKey.equals(createPublicKey({ key: await exportJWK(publicKey), format: "jwk" })));
      assert.equal(cert.subject, `CN=identity-service signing key ${kid}`);
      assert.equal(cert.issuer, cert.subject);
      assert.equal(new Date(cert.validFrom).getTime(), now);
      assert.ok(new Date(cert.validTo).getTime() > now + 9 * 365 * 24 * 3600 * 1000);
    });
  }
});
