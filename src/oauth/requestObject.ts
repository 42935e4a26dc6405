import { jwtVerify } from "jose";
import type { Clock } from "../shared/clock.js";
import type { ApplicationRecord } from "../shared/model.js";
import type { SingleUseKeyRepository } from "../store/singleUseKeys.js";
import type { ClientKeys } from "./clientKeys.js";
import { OAuthError } from "./errors.js";
import { jwtAlgsFor } from "./fapi2.js";
import { sha256 } from "./secrets.js";

/** RFC 9101 §10.2: the algorithms a request object may be signed with; never `none`, never HMAC. Ed25519 is EdDSA's fully specified name. */
export const REQUEST_OBJECT_ALGS = ["RS256", "PS256", "ES256", "EdDSA"] as const;
const ACCEPTED_ALGS = [...REQUEST_OBJECT_ALGS, "Ed25519"];

/** A request object's JWT claims that are no authorize parameter. */
const JWT_CLAIMS = new Set(["iss", "aud", "exp", "iat", "nbf", "jti", "sub"]);
/** Parameters a request object may carry at most (authorize takes a dozen or so). */
const MAX_PARAMETERS = 50;
const MAX_JTI_LENGTH = 256;
/**
 * How long a request object's jti is kept when the object has no exp, or a
 * later one: a day, far past the hour FAPI 2.0 Message Signing lets an
 * object live (exp at most an hour after nbf), and a bound on what one
 * object may leave behind.
 */
export const REQUEST_OBJECT_JTI_MAX_KEEP_SECONDS = 24 * 3600;

const refused = (why: string) => new OAuthError("invalid_request_object", why);

/**
 * Signed authorization requests (RFC 9101): a JWT signed with one of the
 * client's registered keys (its jwks or jwksUri), iss its client_id and aud
 * this issuer. Its claims are the authorize parameters, and the only ones
 * used (RFC 9101 §6.3): those sent beside it are dropped, client_id aside.
 * One that carries a jti is taken once, at authorize or at PAR, on every
 * instance: the jti is recorded for its client by one conditional insert.
 */
export class RequestObjects {
  constructor(
    private readonly issuer: string,
    private readonly clock: Clock,
    private readonly clientKeys: Pick<ClientKeys, "of">,
    private readonly jtis: Pick<SingleUseKeyRepository, "useOnce">,
  ) {}

  /** The authorize parameters `jwt` carries for `app`, client_id included; invalid_request_object when it cannot be trusted. */
  async open(app: ApplicationRecord, jwt: string): Promise<Map<string, string>> {
    const keys = this.clientKeys.of(app);
    if (!keys) throw refused("the client has registered no keys (jwks or jwksUri) to verify a request object with");
    let payload: Record<string, unknown>;
    try {
      // RFC 9101 §6.1: `none` and HMAC are outside ACCEPTED_ALGS, so refused with every other bad signature; FAPI 2.0 §5.4 drops RS256 for a fapi2 client.
      ({ payload } = await jwtVerify(jwt, keys, {
        algorithms: jwtAlgsFor(app, ACCEPTED_ALGS),
        issuer: app.clientId,
        audience: this.issuer,
        currentDate: new Date(this.clock.now()),
      }));
    } catch {
      // Which check failed (signature, key, claim) is not the caller's to learn.
      throw refused("the request object is not signed by a key of this client, or its iss, aud or exp do not hold");
    }
    // RFC 9101 §5: the client_id inside, when there is one, is the one outside.
    if (payload.client_id !== undefined && payload.client_id !== app.clientId) throw refused("the request object's client_id is not the client's");
    const params = requestParameters(payload);
    params.set("client_id", app.clientId);
    // jwtVerify took exp only as a number.
    if (payload.jti !== undefined) await this.useOnce(app, payload.jti, payload.exp as number | undefined);
    return params;
  }

  /**
   * RFC 7519 §4.1.7: the jti lets a JWT be used once. It is spent by the
   * object's first use, last of the checks, so a refused object spends
   * nothing. Kept until exp, after which the object is refused anyway, or
   * for REQUEST_OBJECT_JTI_MAX_KEEP_SECONDS when that comes first.
   */
  private async useOnce(app: ApplicationRecord, jti: unknown, exp: number | undefined): Promise<void> {
    // RFC 7519 §4.1.7: a case-sensitive string.
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) throw refused("the request object's jti is not usable");
    const now = this.clock.now();
    const kept = now + REQUEST_OBJECT_JTI_MAX_KEEP_SECONDS * 1000;
    const expiresAt = exp === undefined ? kept : Math.min(Math.ceil(exp * 1000), kept);
    if (!(await this.jtis.useOnce(sha256(`${app.clientId}\u0000${jti}`), expiresAt, now))) {
      throw refused("the request object was used before: its jti is spent, so a new one needs a new jti");
    }
  }
}

/** Its claims as authorize parameters, as a query would carry them. */
function requestParameters(payload: Record<string, unknown>): Map<string, string> {
  const params = new Map<string, string>();
  const entries = Object.entries(payload).filter(([name]) => !JWT_CLAIMS.has(name));
  if (entries.length > MAX_PARAMETERS) throw refused("the request object carries too many parameters");
  for (const [name, value] of entries) {
    // RFC 9101 §4: a request object holds neither of these.
    if (name === "request" || name === "request_uri") throw refused(`a request object must not contain ${name}`);
    params.set(name, parameterValue(name, value));
  }
  return params;
}

function parameterValue(name: string, value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  // RFC 8707 resource, repeatable: joined by spaces as a repeated query parameter is (http/params.ts).
  if (Array.isArray(value) && value.every((v) => typeof v === "string" && /^\S+$/.test(v))) return value.join(" ");
  // OIDC Core §5.5: `claims` is a JSON object, which the query carries as JSON text.
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return JSON.stringify(value);
  throw refused(`the request object's ${name.slice(0, 64)} is not a usable value`);
}
