import { RESPONSE_MODES, RESPONSE_TYPES } from "./authorizeRequest.js";
import { CLIENT_AUTH_ENDPOINT_PATHS, CLIENT_SECRET_JWT_ALGS, PRIVATE_KEY_JWT_ALGS } from "./clientAssertion.js";
import { DPOP_SIGNING_ALGS } from "./dpop.js";
import { GRANT_TYPES } from "./grants/index.js";
import { PKCE_METHOD } from "./pkce.js";
import { REQUEST_OBJECT_ALGS } from "./requestObject.js";
import { GRANTABLE_SCOPES, SCOPE_CLAIMS } from "./scopes.js";
import { CASDOOR_CLAIMS } from "./tokenFormats.js";
import { ACR_VALUES } from "./factors/amr.js";
import { SIGNING_ALGS } from "../shared/model.js";

/** JWT client authentication (OIDC Core §9). */
const JWT_AUTH = ["client_secret_jwt", "private_key_jwt"];
const ASSERTION_ALGS = [...PRIVATE_KEY_JWT_ALGS, ...CLIENT_SECRET_JWT_ALGS];

/**
 * OpenID Provider / RFC 8414 metadata. It lists only what this server really
 * serves, so strict clients configured from it do not fail later.
 */
export function discoveryDocument(
  issuer: string,
  registration?: RegistrationMetadata,
  requirePushedAuthorizationRequests = false,
) {
  return {
    issuer,
    authorizationEndpoint: `${issuer}/login/oauth/authorize`,
    tokenEndpoint: `${issuer}/api/login/oauth/access_token`,
    introspectionEndpoint: `${issuer}/api/login/oauth/introspect`,
    userinfoEndpoint: `${issuer}/api/userinfo`,
    revocationEndpoint: `${issuer}/api/login/oauth/revoke`,
    endSessionEndpoint: `${issuer}/api/logout`,
    jwksUri: `${issuer}/.well-known/jwks`,
    // Back-Channel Logout 1.0 §2.1: logout tokens to each backchannelLogoutUri, with `sid` (ID tokens carry it too).
    backchannelLogoutSupported: true,
    backchannelLogoutSessionSupported: true,
    // RFC 8628 §4.
    deviceAuthorizationEndpoint: `${issuer}${CLIENT_AUTH_ENDPOINT_PATHS.device_authorization}`,
    responseTypesSupported: [...RESPONSE_TYPES],
    responseModesSupported: [...RESPONSE_MODES],
    grantTypesSupported: [...GRANT_TYPES],
    subjectTypesSupported: ["public"],
    // Every algorithm an application may sign with, keys or not yet: an algorithm's first key is made
    // by its first token (keys.ts), and a FAPI 2.0 client looks for PS256, ES256 or EdDSA first (FAPI 2.0 §5.4).
    idTokenSigningAlgValuesSupported: [...SIGNING_ALGS],
    scopesSupported: [...GRANTABLE_SCOPES],
    // What the scopes release (OIDC names), and Casdoor's user-object claims of the JWT token format.
    claimsSupported: [...new Set(["sub", "iss", "aud", "exp", "iat", "auth_time", "acr", "amr", "nonce", "azp", "sid", ...SCOPE_CLAIMS, ...CASDOOR_CLAIMS])],
    // OIDC Discovery §3: `mfa` in acr_values asks for a second factor (oauth/factors/).
    acrValuesSupported: [...ACR_VALUES],
    // OIDC Core §5.5: its id_token member feeds the ID token, its userinfo member userinfo.
    claimsParameterSupported: true,
    // "none": a PKCE code exchange may leave the secret out (the spec).
    tokenEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post", ...JWT_AUTH, "none"],
    introspectionEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post", ...JWT_AUTH],
    // "none": a public client (the console) revokes its own tokens with its client_id (RFC 7009 §2.1).
    revocationEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post", ...JWT_AUTH, "none"],
    // Client assertions (RFC 7523 §2.2): never "none" (OIDC Discovery §3).
    tokenEndpointAuthSigningAlgValuesSupported: [...ASSERTION_ALGS],
    introspectionEndpointAuthSigningAlgValuesSupported: [...ASSERTION_ALGS],
    revocationEndpointAuthSigningAlgValuesSupported: [...ASSERTION_ALGS],
    codeChallengeMethodsSupported: [PKCE_METHOD],
    // RFC 9449 §5.1.
    dpopSigningAlgValuesSupported: [...DPOP_SIGNING_ALGS],
    authorizationResponseIssParameterSupported: true,
    // RFC 9101: signed request objects at authorize and PAR, in these algorithms.
    requestParameterSupported: true,
    requestObjectSigningAlgValuesSupported: [...REQUEST_OBJECT_ALGS],
    // Said outright: a missing one means true (OIDC Discovery §3). A request_uri is taken only from PAR, never fetched.
    requestUriParameterSupported: false,
    // RFC 9126 §5.
    pushedAuthorizationRequestEndpoint: `${issuer}${CLIENT_AUTH_ENDPOINT_PATHS.pushed_authorization_request}`,
    requirePushedAuthorizationRequests,
    // RFC 7591 §3 and the Client ID Metadata Document draft, when registration is on.
    ...(registration ? { registrationEndpoint: `${issuer}${REGISTRATION_PATH}` } : {}),
    ...(registration?.metadataDocuments ? { clientIdMetadataDocumentSupported: true } : {}),
  };
}

/** Where RFC 7591 registration is served (Casdoor's path). */
export const REGISTRATION_PATH = "/api/oauth/register";

/** What discovery says of client registration, when it is on. */
export interface RegistrationMetadata {
  /** Whether an https client_id names its metadata document (`--client-registration open`). */
  metadataDocuments: boolean;
}

/** Where RFC 9728 metadata of this service's own APIs is served. */
export const PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/**
 * RFC 9728 §2 metadata of this service's own protected APIs (userinfo,
 * get-account): the issuer is both the resource and its authorization
 * server. Their tokens are any of this issuer's for a user.
 */
export function protectedResourceDocument(issuer: string) {
  return {
    resource: issuer,
    authorizationServers: [issuer],
    scopesSupported: [...GRANTABLE_SCOPES],
    bearerMethodsSupported: ["header"],
    resourceName: "Account and userinfo API",
  };
}
