import { generateKeyPairSync } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";
import { OIDC_ALGS, OIDC_CLIENT, oidcResource } from "./shared.js";

/**
 * node-oidc-provider doing the work our rows measure: client_credentials
 * with JWT access tokens signed with RS256, ES256 or EdDSA (through a
 * resource indicator per algorithm whose resource server asks for the jwt
 * format and that algorithm), with opaque tokens (no resource: its default
 * format), and introspection of an opaque token. Client authentication is
 * client_secret_basic; storage is its default in-memory adapter.
 */
const jwk = (type: "rsa" | "ec" | "ed25519", alg: string) => {
  const { privateKey } = type === "rsa" ? generateKeyPairSync("rsa", { modulusLength: 2048 }) : type === "ec" ? generateKeyPairSync("ec", { namedCurve: "P-256" }) : generateKeyPairSync("ed25519");
  return { ...privateKey.export({ format: "jwk" }), kid: alg, use: "sig", alg };
};

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: OIDC_CLIENT.id,
        client_secret: OIDC_CLIENT.secret,
        grant_types: ["client_credentials"],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: [jwk("rsa", "RS256"), jwk("ec", "ES256"), jwk("ed25519", "EdDSA")] },
    cookies: { keys: ["bench-cookie-signing-key"] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          const alg = OIDC_ALGS.find((a) => oidcResource(a) === resource);
          if (!alg) throw new Error(`unknown resource ${resource}`);
          return { scope: "api", audience: resource, accessTokenTTL: 3600, accessTokenFormat: "jwt", jwt: { sign: { alg } } };
        },
      },
    },
  });
  server.on("request", provider.callback());
  process.stdout.write(`listening on ${issuer}\n`);
});
process.once("SIGTERM", () => process.exit(0));
