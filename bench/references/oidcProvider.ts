import { generateKeyPairSync } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";
import { OIDC_CLIENT, OIDC_RESOURCE } from "./shared.js";

/**
 * node-oidc-provider doing the work our rows measure: client_credentials with
 * RS256 JWT access tokens (through a resource indicator whose resource server
 * asks for the jwt format), client_credentials with opaque tokens (no
 * resource), and introspection of an opaque token. Client authentication is
 * client_secret_basic; storage is its default in-memory adapter.
 */

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
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
    jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "bench", use: "sig", alg: "RS256" }] },
    cookies: { keys: ["bench-cookie-signing-key"] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: () => ({
          scope: "api",
          audience: OIDC_RESOURCE,
          accessTokenTTL: 3600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
  });
  server.on("request", provider.callback());
  process.stdout.write(`listening on ${issuer}\n`);
});
process.once("SIGTERM", () => process.exit(0));
