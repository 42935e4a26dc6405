import { isLoopback } from "../federation/urlRule.js";
import { echo, OAuthError } from "./errors.js";
import { InvalidInputError } from "../accounts/validation.js";
import { optionalJwks, optionalJwksUri } from "../accounts/clientAuthMethod.js";
import { backchannelLogoutUriProblem, optionalBackchannelLogoutUri } from "../accounts/backchannelLogoutUri.js";
import { ADMIN_SCOPE } from "./scopes.js";

/**
 * RFC 7591 §2 client metadata, as a self-registered client (or a client ID
 * metadata document) may give it, checked under this service's rules:
 * - redirect URIs: https; http on a loopback host, any port (RFC 8252 §7.3);
 *   or a private-use scheme such as `com.example.app:/cb` (RFC 8252 §7.1);
 *   never a fragment (RFC 6749 §3.1.2) nor a wildcard;
 * - only the code flow: grant types authorization_code and refresh_token,
 *   response type code. Never password, client_credentials or implicit;
 * - token_endpoint_auth_method none (a public client, which must use PKCE
 *   S256), client_secret_basic, client_secret_post, or private_key_jwt
 *   with its public keys in jwks or jwks_uri (client_secret_jwt is not
 *   offered);
 * - backchannel_logout_uri under an application's rule, never with leave
 *   for a private address; the flags backchannel_logout_session_required,
 *   dpop_bound_access_tokens and require_pushed_authorization_requests;
 * - never the admin scope.
 * Anything else is `invalid_redirect_uri` or `invalid_client_metadata`
 * (RFC 7591 §3.2.2), with a description.
 */
export interface ClientMetadata {
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  policy_uri?: string;
  tos_uri?: string;
  scope?: string;
  contacts?: string[];
  software_id?: string;
  software_version?: string;
  jwks?: { keys: unknown[] };
  jwks_uri?: string;
  /** Back-Channel Logout 1.0 §2.2: where logout tokens are POSTed. */
  backchannel_logout_uri?: string;
  backchannel_logout_session_required: boolean;
  /** RFC 9449 §5.2: token requests without a DPoP proof are refused. */
  dpop_bound_access_tokens: boolean;
  /** RFC 9126 §6: authorize requests must be pushed first. */
  require_pushed_authorization_requests: boolean;
}

/** client_secret_jwt is left out: its HS256 key would have to be kept readable (sealed), and a registered client has private_key_jwt. */
export const REGISTRATION_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"] as const;
export type TokenEndpointAuthMethod = (typeof REGISTRATION_AUTH_METHODS)[number];
export const REGISTRATION_GRANT_TYPES = ["authorization_code", "refresh_token"] as const;

const STRING_FIELDS = ["client_name", "scope", "software_id", "software_version"] as const;
const URL_FIELDS = ["client_uri", "logo_uri", "policy_uri", "tos_uri", "jwks_uri"] as const;
const MAX_REDIRECT_URIS = 10;
const MAX_TEXT = 500;

/** The flags a client may register, false unless given (RFC 7591 §3.2.1: the answer holds them either way). */
const FLAG_FIELDS = ["backchannel_logout_session_required", "dpop_bound_access_tokens", "require_pushed_authorization_requests"] as const;

const metadataError = (description: string) => new OAuthError("invalid_client_metadata", description);
const redirectError = (description: string) => new OAuthError("invalid_redirect_uri", description);

/** The problem with one redirect URI, or undefined. */
export function registeredRedirectProblem(uri: string): string | undefined {
  if (uri.length > 2000) return "is longer than 2000 characters";
  if (uri.includes("#")) return "has a fragment (RFC 6749 §3.1.2)";
  if (uri.includes("*")) return "has a wildcard: redirect URIs are matched exactly";
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "is not an absolute URI";
  }
  if (url.username || url.password) return "carries credentials";
  if (url.protocol === "https:") return url.hostname ? undefined : "has no host";
  if (url.protocol === "http:") {
    return ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname) ? undefined : "uses http on a host that is not loopback (RFC 8252 §7.3)";
  }
  // RFC 8252 §7.1: a private-use scheme is a reverse domain name, so it holds a dot.
  const scheme = url.protocol.slice(0, -1);
  if (!/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/.test(scheme)) return "uses a scheme that is neither https nor a private-use one like com.example.app (RFC 8252 §7.1)";
  return undefined;
}

function optionalText(raw: Record<string, unknown>, field: string): string | undefined {
  const value = raw[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > MAX_TEXT || /[\u0000-\u001f]/.test(value)) {
    throw metadataError(`${field} must be a string of at most ${MAX_TEXT} characters on one line`);
  }
  return value;
}

function optionalHttpsUrl(raw: Record<string, unknown>, field: string): string | undefined {
  const value = optionalText(raw, field);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw metadataError(`${field} is not an absolute URL`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname))) {
    throw metadataError(`${field} must use https`);
  }
  return value;
}

function stringList(raw: unknown, field: string, fallback: readonly string[]): string[] {
  if (raw === undefined || raw === null) return [...fallback];
  if (!Array.isArray(raw) || raw.some((v) => typeof v !== "string") || raw.length > 20) throw metadataError(`${field} must be a list of strings`);
  return [...new Set(raw as string[])];
}

/** RFC 7591 §2 metadata checked; `invalid_redirect_uri` or `invalid_client_metadata` otherwise. */
/** `loopbackLogout`: tests only (--allow-insecure-client-metadata), a backchannel_logout_uri on a loopback host. */
export function parseClientMetadata(raw: unknown, rules: { loopbackLogout?: boolean } = {}): ClientMetadata {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw metadataError("the body must be a JSON object of client metadata");
  const input = raw as Record<string, unknown>;
  const redirectUris = input.redirect_uris;
  if (!Array.isArray(redirectUris) || redirectUris.length === 0 || redirectUris.length > MAX_REDIRECT_URIS || redirectUris.some((u) => typeof u !== "string")) {
    throw redirectError(`redirect_uris must be a list of 1-${MAX_REDIRECT_URIS} URIs`);
  }
  for (const uri of redirectUris as string[]) {
    const problem = registeredRedirectProblem(uri);
    if (problem) throw redirectError(`redirect URI ${JSON.stringify(echo(uri))} ${problem}`);
  }
  const grantTypes = stringList(input.grant_types, "grant_types", ["authorization_code"]);
  const refusedGrant = grantTypes.find((g) => !(REGISTRATION_GRANT_TYPES as readonly string[]).includes(g));
  if (refusedGrant !== undefined) {
    throw metadataError(`grant type ${echo(refusedGrant)} is not open to registered clients: only ${REGISTRATION_GRANT_TYPES.join(" and ")}`);
  }
  if (!grantTypes.includes("authorization_code")) throw metadataError("grant_types must include authorization_code");
  const responseTypes = stringList(input.response_types, "response_types", ["code"]);
  if (responseTypes.some((t) => t !== "code")) throw metadataError("response_types may only be code: registered clients use the code flow");
  const method = input.token_endpoint_auth_method ?? "client_secret_basic";
  if (typeof method !== "string" || !(REGISTRATION_AUTH_METHODS as readonly string[]).includes(method)) {
    throw metadataError(`token_endpoint_auth_method must be one of ${REGISTRATION_AUTH_METHODS.join(", ")}`);
  }
  const scope = optionalText(input, "scope");
  if (scope?.split(" ").includes(ADMIN_SCOPE)) throw metadataError(`the scope ${ADMIN_SCOPE} is never granted to registered clients`);
  const metadata: ClientMetadata = {
    redirect_uris: [...new Set(redirectUris as string[])],
    grant_types: grantTypes,
    response_types: responseTypes,
    token_endpoint_auth_method: method as TokenEndpointAuthMethod,
    ...flags(input),
  };
  for (const field of STRING_FIELDS) {
    const value = optionalText(input, field);
    if (value !== undefined) metadata[field] = value;
  }
  for (const field of URL_FIELDS) {
    const value = optionalHttpsUrl(input, field);
    if (value !== undefined) metadata[field] = value;
  }
  const logoutUri = backchannelLogoutUri(optionalText(input, "backchannel_logout_uri"), rules.loopbackLogout ?? false);
  if (logoutUri) metadata.backchannel_logout_uri = logoutUri;
  if (input.contacts !== undefined) metadata.contacts = stringList(input.contacts, "contacts", []);
  if (input.jwks !== undefined) {
    const jwks = input.jwks as { keys?: unknown };
    if (typeof jwks !== "object" || jwks === null || !Array.isArray(jwks.keys) || JSON.stringify(jwks).length > 8192) {
      throw metadataError("jwks must be a JWK Set ({\"keys\": [...]}) of at most 8 KiB");
    }
    metadata.jwks = { keys: publicKeys(jwks as { keys: unknown[] }) };
  }
  // RFC 7591 §2: jwks and jwks_uri must not both be present.
  if (metadata.jwks && metadata.jwks_uri) throw metadataError("jwks and jwks_uri must not both be given");
  if (metadata.jwks_uri) publicKeysUri(metadata.jwks_uri);
  // RFC 7523 §2.2 / OIDC Core §9: private_key_jwt is verified with the keys the client registered.
  if (method === "private_key_jwt" && !metadata.jwks?.keys.length && !metadata.jwks_uri) throw metadataError("private_key_jwt needs jwks or jwks_uri");
  return metadata;
}

function flags(input: Record<string, unknown>): Pick<ClientMetadata, (typeof FLAG_FIELDS)[number]> {
  const value = (field: (typeof FLAG_FIELDS)[number]) => {
    const raw = input[field] ?? false;
    if (typeof raw !== "boolean") throw metadataError(`${field} must be true or false`);
    return raw;
  };
  return Object.fromEntries(FLAG_FIELDS.map((field) => [field, value(field)])) as Pick<ClientMetadata, (typeof FLAG_FIELDS)[number]>;
}

/**
 * An application's rule for its back-channel logout URI (backchannelLogoutUri.ts),
 * without the administrator's leave for a private address, and stricter: a
 * registrant is anyone, so never http nor a loopback host (the service would
 * POST to itself or its neighbours), unless `loopbackAllowed` (tests only).
 * Undefined or "" for none.
 */
function backchannelLogoutUri(raw: string | undefined, loopbackAllowed: boolean): string | undefined {
  let value: string | undefined;
  try {
    value = optionalBackchannelLogoutUri(raw);
  } catch (err) {
    throw metadataError(`backchannel_logout_uri ${err instanceof InvalidInputError ? err.problem : "is not usable"}`);
  }
  if (value && !loopbackAllowed && (!value.startsWith("https:") || isLoopback(new URL(value)))) {
    throw metadataError("backchannel_logout_uri must be an https URL of a public host");
  }
  const problem = value ? backchannelLogoutUriProblem(value, false) : undefined;
  if (problem) throw metadataError(`backchannel_logout_uri ${problem.replace(/: set allowPrivate.*$/, "")}`);
  return value || undefined;
}

/** The same rules as an administrator's jwks (public RSA, EC or OKP keys only), as RFC 7591 errors. */
function publicKeys(jwks: { keys: unknown[] }): unknown[] {
  if (jwks.keys.length === 0) return [];
  try {
    return (JSON.parse(optionalJwks(jwks)!) as { keys: unknown[] }).keys;
  } catch (err) {
    throw metadataError(`jwks ${err instanceof InvalidInputError ? err.message : "is not a JWK Set"}`);
  }
}

/** A jwks_uri is fetched under the outbound rules: https, and no private or loopback host. */
function publicKeysUri(uri: string): void {
  try {
    optionalJwksUri(uri);
  } catch (err) {
    throw metadataError(`jwks_uri ${err instanceof InvalidInputError ? err.message : "is not usable"}`);
  }
}
