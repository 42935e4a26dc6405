import { generateKeyPairSync } from "node:crypto";

/** The bench's private_key_jwt application (RFC 7523 client authentication) and its ES256 key pair, made once per run. */
export const JWT_CLIENT_ID = "bench-private-key-jwt";
const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
export const jwtClientKey = pair.privateKey;

export const jwtClientApplication = () => ({
  name: JWT_CLIENT_ID,
  clientId: JWT_CLIENT_ID,
  grantTypes: ["client_credentials"],
  tokenEndpointAuthMethod: "private_key_jwt",
  jwks: JSON.stringify({ keys: [{ ...pair.publicKey.export({ format: "jwk" }), kid: "bench", alg: "ES256", use: "sig" }] }),
  signingAlg: "ES256",
});
