import type { ServiceImpl } from "@connectrpc/connect";
import { FederationService, type ProviderInput as ProviderInputMessage } from "../../gen/identity/v1/federation_pb.js";
import type { Domain } from "../domain/index.js";
import { parseProviderInput, parseProviderPatch } from "../federation/providers.js";
import { OAuthError } from "../oauth/errors.js";
import { randomToken } from "../oauth/secrets.js";
import { accountOf, linkedIdentityOf } from "./account.js";
import { clientAddressOf } from "./headers.js";
import { epochSecondsOf } from "./adminAuth.js";
import type { MethodGuards } from "./guards.js";
import type { ProviderRecord } from "../shared/model.js";

/** Proto input to the plain object the shared validation reads; unset stays unset. */
function providerFields(input: ProviderInputMessage | undefined): Record<string, unknown> {
  if (!input) throw new OAuthError("invalid_request", "provider: is required");
  const { $typeName: _t, $unknown: _u, userMapping, ...fields } = input;
  const plain: Record<string, unknown> = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  if (userMapping) {
    // Proto strings are never unset: an empty one is a key left to its default.
    const { $typeName: _m, $unknown: _n, ...paths } = userMapping;
    plain.userMapping = Object.fromEntries(Object.entries(paths).filter(([, v]) => v !== ""));
  }
  return plain;
}

/**
 * What runs before each method (guards.ts): provider administration needs the
 * admin token; the login round trip is public, and its answers carry secrets.
 */
export const federationGuards: MethodGuards<typeof FederationService> = {
  createProvider: ["noStore", "admin"],
  getProvider: ["noStore", "admin"],
  listProviders: ["noStore", "admin"],
  updateProvider: ["noStore", "admin"],
  deleteProvider: ["noStore", "admin"],
  beginLogin: ["noStore"],
  completeLogin: ["noStore"],
};

export function federationService(domain: Domain): ServiceImpl<typeof FederationService> {
  const { providerAdmin: admin, federation } = domain;

  // Whether a secret is stored; one that cannot be opened (another key) is there all the same.
  const secretIsSet = (provider: ProviderRecord) => {
    try {
      return admin.clientSecret(provider) !== "";
    } catch {
      return true;
    }
  };

  // Everything but the secret, which never leaves the service.
  const providerOut = (provider: ProviderRecord) => {
    const { clientSecret: _secret, createdAt, updatedAt, ...rest } = provider;
    return {
      ...rest,
      userMapping: { ...provider.userMapping },
      clientSecretEncrypted: admin.isEncrypted(provider),
      clientSecretSet: secretIsSet(provider),
      redirectUri: federation.redirectUriOf(provider),
      createdTime: epochSecondsOf(createdAt),
      updatedTime: epochSecondsOf(updatedAt),
    };
  };

  return {
    async createProvider(req) {
      return { provider: providerOut(await admin.create(parseProviderInput(providerFields(req.provider)))) };
    },
    async getProvider(req) {
      return { provider: providerOut(await admin.get(req.name)) };
    },
    async listProviders() {
      return { providers: (await admin.list()).map(providerOut) };
    },
    async updateProvider(req) {
      const fields = providerFields(req.provider);
      // The secret is write-only, so a form sends it empty when it is not being changed: that keeps it.
      if (fields.clientSecret === "") delete fields.clientSecret;
      return { provider: providerOut(await admin.update(parseProviderPatch(fields))) };
    },
    async deleteProvider(req) {
      await admin.delete(req.name);
      return {};
    },
    async beginLogin(req) {
      if (!req.provider) throw new OAuthError("invalid_request", "provider: is required");
      // Plays the part of the browser's CSRF cookie: only the caller holds it.
      const loginSecret = randomToken();
      const begun = await federation.begin(req.provider, loginSecret);
      return { authUrl: begun.authUrl, state: begun.state, loginSecret, expiresIn: BigInt(federation.stateTtlSeconds) };
    },
    async completeLogin(req, ctx) {
      // Which callback the browser reached: empty is the shared one.
      const login = await federation.takeState(req.state, { kind: "rpc", loginSecret: req.loginSecret }, req.provider || undefined, clientAddressOf(ctx));
      const { user, identity, created } = await federation.complete(login, req.code, req.iss || undefined, clientAddressOf(ctx));
      const links = await domain.account.linkedIdentities(user.id);
      return { user: accountOf(user, links), identity: linkedIdentityOf(identity), created };
    },
  };
}
