import { decodeJwt, jwtVerify, type JWTVerifyGetKey } from "jose";
import type { SecretBox } from "../federation/secretBox.js";
import type { Clock } from "../shared/clock.js";
import type { ApplicationRecord, TokenEndpointAuthMethod } from "../shared/model.js";
import type { SingleUseKeyRepository } from "../store/singleUseKeys.js";
import type { ClientKeys } from "./clientKeys.js";
import { OAuthError } from "./errors.js";
import { assertionAudiences, jwtAlgsFor } from "./fapi2.js";
import { sha256 } from "./secrets.js";

/** RFC 7523 §2.2: the client_assertion_type of a JWT client assertion. */
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** Algorithms of private_key_jwt: the keys we sign with too; Ed25519 is EdDSA's fully specified name. Never `none`, never HMAC. */
export const PRIVATE_KEY_JWT_ALGS = ["RS256", "PS256", "ES256", "EdDSA", "Ed25519"] as const;
/** client_secret_jwt: HMAC with the client's secret (OIDC Core §9). */
export const CLIENT_SECRET_JWT_ALGS = ["HS256"] as const;

/** The longest an assertion may still have to live: a replay is refused by its jti, which is kept this long at most. */
export const MAX_ASSERTION_LIFETIME_S = 300;
/**
 * How far the client's clock may run ahead of ours (its nbf) or ours ahead
 * of its (its exp): FAPI 2.0 §5.3.2.1 asks that an iat or nbf up to 10
 * seconds ahead be taken, as RFC 7523 §3 allows leeway for clock skew. A
 * client that sets nbf to its now (openid-client) is otherwise refused
 * whenever our clock is behind its by any part of a second.
 */
const ASSERTION_CLOCK_SKEW_S = 10;
const MAX_JTI_LENGTH = 256;

/** The endpoints that authenticate clients, and their paths (those discovery names). */
export const CLIENT_AUTH_ENDPOINT_PATHS = {
  token: "/api/login/oauth/access_token",
  introspection: "/api/login/oauth/introspect",
  revocation: "/api/login/oauth/revoke",
  device_authorization: "/api/device-auth",
  // RFC 9126 §2: the pushed authorization request endpoint.
  pushed_authorization_request: "/api/oauth/par",
} as const;
export type ClientAuthEndpoint = keyof typeof CLIENT_AUTH_ENDPOINT_PATHS;

/** The context a client_secret_jwt application's sealed secret is bound to (federation/secretBox.ts). */
export const clientSecretSealContext = (applicationId: string) => `application:${applicationId}`;

export const isJwtAuthMethod = (method: TokenEndpointAuthMethod) => method === "client_secret_jwt" || method === "private_key_jwt";

/** The client an assertion says it comes from (its iss, else sub), unverified: used to find its keys when no client_id is sent (RFC 7523 §3). */
export function claimedClientId(assertion: string): string | undefined {
  try {
    const { iss, sub } = decodeJwt(assertion);
    const id = typeof iss === "string" && iss ? iss : sub;
    return typeof id === "string" && id ? id : undefined;
  } catch {
    return undefined;
  }
}

const refused = (why: string) => new OAuthError("invalid_client", `client authentication failed: ${why}`);

/**
 * Checks JWT client assertions (RFC 7523 §2.2 and §3, OIDC Core §9): the
 * signature with the application's keys (private_key_jwt: its jwks or
 * jwksUri; client_secret_jwt: its secret, HS256), iss = sub = client_id,
 * an aud naming the issuer or the endpoint (at PAR the token endpoint too;
 * a fapi2 client's the issuer alone, as a string), nbf and exp with
 * ASSERTION_CLOCK_SKEW_S of leeway, an exp no further than
 * MAX_ASSERTION_LIFETIME_S ahead, and a jti never accepted before, recorded
 * in the store by one conditional insert, so a replay is refused on every
 * instance.
 */
export class ClientAssertions {
  constructor(
    private readonly issuer: string,
    private readonly clock: Clock,
    private readonly jtis: Pick<SingleUseKeyRepository, "useOnce">,
    private readonly clientKeys: Pick<ClientKeys, "of">,
    private readonly secrets: Pick<SecretBox, "open">,
  ) {}

  /** Resolves when `assertion` authenticates `app` at `endpoint`; otherwise throws invalid_client. */
  async verify(app: ApplicationRecord, assertion: string, endpoint: ClientAuthEndpoint): Promise<void> {
    const { key, algorithms } = this.keyOf(app);
    const now = this.clock.now();
    const { audiences, issuerStringOnly } = assertionAudiences(app, this.issuer, this.audiencesAt(endpoint));
    const options = {
      algorithms: [...algorithms],
      issuer: app.clientId,
      subject: app.clientId,
      audience: audiences,
      requiredClaims: ["exp", "jti"],
      currentDate: new Date(now),
      clockTolerance: ASSERTION_CLOCK_SKEW_S,
    };
    let payload;
    try {
      ({ payload } = key instanceof Uint8Array ? await jwtVerify(assertion, key, options) : await jwtVerify(assertion, key, options));
    } catch {
      // Why exactly (signature, claim, key) is not the caller's to learn.
      throw refused("the client assertion is not valid");
    }
    if (issuerStringOnly && payload.aud !== this.issuer) throw refused("the client assertion's aud must be the issuer, as a string");
    const exp = payload.exp!;
    if (exp * 1000 - now > MAX_ASSERTION_LIFETIME_S * 1000) throw refused(`the client assertion must expire within ${MAX_ASSERTION_LIFETIME_S} seconds`);
    const jti = payload.jti!;
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) throw refused("the client assertion's jti is not usable");
    // RFC 7523 §3: used once. Kept until exp and the skew allowed past it, after which the assertion is refused anyway.
    if (!(await this.jtis.useOnce(sha256(`${app.clientId}\u0000${jti}`), (exp + ASSERTION_CLOCK_SKEW_S) * 1000, now))) {
      throw refused("the client assertion was used before");
    }
  }

  /** The issuer and the endpoint's URL; RFC 9126 §2: at PAR the token endpoint's URL as well. */
  private audiencesAt(endpoint: ClientAuthEndpoint): string[] {
    const urls = [this.issuer, `${this.issuer}${CLIENT_AUTH_ENDPOINT_PATHS[endpoint]}`];
    if (endpoint === "pushed_authorization_request") urls.push(`${this.issuer}${CLIENT_AUTH_ENDPOINT_PATHS.token}`);
    return urls;
  }

  private keyOf(app: ApplicationRecord): { key: JWTVerifyGetKey | Uint8Array; algorithms: readonly string[] } {
    if (app.tokenEndpointAuthMethod === "private_key_jwt") {
      const key = this.clientKeys.of(app);
      if (!key) throw refused("the client's jwks cannot be read");
      // FAPI 2.0 §5.4: a fapi2 client signs with PS256, ES256 or EdDSA only.
      return { key, algorithms: jwtAlgsFor(app, PRIVATE_KEY_JWT_ALGS) };
    }
    if (app.tokenEndpointAuthMethod === "client_secret_jwt" && app.clientSecretSealed) {
      let secret: string;
      try {
        secret = this.secrets.open(app.clientSecretSealed, clientSecretSealContext(app.id));
      } catch {
        throw refused("the client's secret cannot be read");
      }
      return { key: new TextEncoder().encode(secret), algorithms: CLIENT_SECRET_JWT_ALGS };
    }
    throw refused("this client does not authenticate with a client assertion");
  }
}
