import type { JWTPayload } from "jose";
import { OAuthError } from "../errors.js";
import { parseScope } from "../scopes.js";
import { sha256 } from "../secrets.js";
import { requireParam } from "./params.js";
import { defineGrant } from "./types.js";

/** RFC 7523 §2.1. */
export const JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/** What identify() verified, for handle() of the same request (keyed by its parameters object, made afresh per request). */
const verified = new WeakMap<object, JWTPayload & { sub: string; exp: number }>();

/**
 * JWT Bearer grant (RFC 7523 §2.1), for workload identity: a service presents
 * a token its platform signed (a Kubernetes service account, a CI job) and
 * gets ours for the application a `trustedIssuers` entry names. No client
 * secret: the assertion is the proof, and the entry, not grantTypes, enables
 * the grant. Every failure is invalid_grant (§3.1).
 */
export const jwtBearerGrant = defineGrant({
  grantType: JWT_BEARER_GRANT_TYPE,
  shortName: "jwt_bearer",
  parameters: ["assertion", "scope"],
  // Enabled by a trustedIssuers entry, whatever an application's grantTypes say.
  alwaysEnabled: true,
  needsSecret: false,
  async identify(client, params, deps) {
    if (client.clientSecret || client.clientAssertion) throw new OAuthError("invalid_grant", "this grant takes no client credentials: the assertion is the proof");
    const assertion = requireParam(params.assertion, "assertion");
    const { entry, claims } = await deps.trustedIssuers.verify(assertion);
    const app = await deps.store.applications.findByName(entry.application);
    if (!app) throw new OAuthError("invalid_grant", "the assertion is refused: its trusted issuer names no existing application");
    if (client.clientId && client.clientId !== app.clientId) throw new OAuthError("invalid_grant", "the assertion is refused: client_id is not the trusted issuer's application");
    verified.set(params, claims);
    return app;
  },
  async handle(app, params, deps) {
    const claims = verified.get(params);
    if (!claims) throw new OAuthError("invalid_grant", "the assertion is refused");
    const now = deps.clock.now();
    // §3: a jti, when present, is used once; kept until the assertion's exp.
    if (claims.jti !== undefined) {
      const key = sha256(`jwt-bearer\u0000${claims.iss}\u0000${String(claims.jti)}`);
      if (!(await deps.store.clientAssertionJtis.useOnce(key, claims.exp * 1000, now))) throw new OAuthError("invalid_grant", "the assertion is refused: it was used before");
    }
    return deps.minter.mint({ app, subject: claims.sub, scopes: parseScope(params.scope), idToken: false, refreshToken: false });
  },
});
