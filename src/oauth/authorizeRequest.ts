import type { ApplicationRepository } from "../store/applications.js";
import { parseClaimsRequest, type ClaimsRequest } from "./claimsRequest.js";
import { echo, OAuthError } from "./errors.js";
import { parseChallenge, PKCE_METHOD } from "./pkce.js";
import { applicationRedirectAllowed } from "./redirectUris.js";
import { isPublicClient } from "./publicClients.js";
import { parseScope } from "./scopes.js";
import { parseResourceParam, RESOURCE_PARAM, scopesOfResources, type ResourceIndicators } from "./resourceIndicators.js";
import { grantEnabled } from "./grants/index.js";
import type { ApplicationRecord } from "../shared/model.js";

/**
 * The response types served; a multi-valued one in its canonical (sorted)
 * order. Those with `code` and more are OIDC Core §3.3's hybrid flow.
 */
export const RESPONSE_TYPES = ["code", "token", "id_token", "id_token token", "code id_token", "code token", "code id_token token"] as const;
export type ResponseType = (typeof RESPONSE_TYPES)[number];

/** `form_post`: OAuth 2.0 Form Post Response Mode. */
export const RESPONSE_MODES = ["query", "fragment", "form_post"] as const;
export type ResponseMode = (typeof RESPONSE_MODES)[number];

/** A validated authorization request (RFC 6749 §4.1.1, §4.2.1; OIDC Core §3.1.2.1). */
export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  responseType: ResponseType;
  responseMode: ResponseMode;
  scopes: string[];
  /** Absent only for a code request with PKCE. */
  state?: string;
  nonce?: string;
  codeChallenge?: string;
  codeChallengeMethod?: typeof PKCE_METHOD;
  /** OIDC `prompt` values, for example `login` to force the form. */
  prompt: string[];
  /** OIDC `max_age`: the oldest sign-in, in seconds, that may be reused. */
  maxAge?: number;
  /** OIDC `login_hint`: the user name to prefill on the login page. */
  loginHint?: string;
  /** OIDC `claims` (Core §5.5), parsed. */
  claims?: ClaimsRequest;
  /** OIDC `acr_values` (Core §3.1.2.1): `mfa` asks for a second factor (oauth/factors/). */
  acrValues?: string[];
  /** RFC 8707 `resource`: the registered resource servers the tokens are meant for. */
  resources?: string[];
  /** Set only for a sign-in the service's own pages start (oauth/ownPageSignIn.ts): it ends at this path, with no code. */
  returnPath?: string;
  /** RFC 9449 §10 `dpop_jkt`: the thumbprint of the DPoP key the code is bound to. */
  dpopJkt?: string;
}

/** Where an authorization response or error goes. */
export interface ResponseTarget {
  redirectUri: string;
  responseMode: ResponseMode;
  state?: string;
}

/**
 * The outcome of validating an authorize request. An error with a target is
 * sent back to the client; one without (unknown client, unregistered
 * redirect_uri) must be shown to the user and never redirected.
 */
export type AuthorizeValidation =
  | { ok: true; app: ApplicationRecord; request: AuthorizeRequest }
  | { ok: false; error: OAuthError; target?: ResponseTarget };

const MAX_NONCE_LENGTH = 512;
/**
 * The request waits server-side while the user signs in: an unbounded state
 * would let anyone park up to a whole request body per page view. 4 KiB
 * holds any state a client encodes (a signed JWT, say).
 */
export const MAX_STATE_LENGTH = 4096;
const MAX_LOGIN_HINT_LENGTH = 256;
const PROMPTS = new Set(["none", "login", "consent", "select_account"]);

/**
 * Find the application and check the redirect_uri. Nothing may be redirected
 * before this succeeds (RFC 6749 §4.1.2.1).
 */
export async function resolveRedirect(
  apps: Pick<ApplicationRepository, "findByClientId">,
  clientId: string | undefined,
  redirectUri: string | undefined,
): Promise<ApplicationRecord> {
  if (!clientId) throw new OAuthError("invalid_request", "missing parameter: client_id");
  const app = await apps.findByClientId(clientId);
  if (!app) throw new OAuthError("invalid_client", "unknown client_id");
  if (!redirectUri) throw new OAuthError("invalid_request", "missing parameter: redirect_uri");
  if (!applicationRedirectAllowed(app, redirectUri)) {
    throw new OAuthError("invalid_request", "redirect_uri is not registered for this application");
  }
  return app;
}

/** Where an error about these parameters goes, once their redirect_uri is trusted. */
function targetOf(get: (name: string) => string | undefined): ResponseTarget {
  return {
    redirectUri: get("redirect_uri")!,
    // An error goes as a form post when one was asked, even before the rest is checked.
    responseMode: get("response_mode") === "form_post" ? "form_post" : defaultResponseMode(get("response_type")),
    state: get("state"),
  };
}

/**
 * `error` about a request, sent back to the client when its client_id and
 * redirect_uri hold (a request object that cannot be trusted, say), else
 * shown to the user (RFC 6749 §4.1.2.1).
 */
export async function refusedRequest(params: ReadonlyMap<string, string>, apps: Pick<ApplicationRepository, "findByClientId">, error: OAuthError): Promise<AuthorizeValidation> {
  const get = (name: string) => params.get(name) || undefined;
  try {
    await resolveRedirect(apps, get("client_id"), get("redirect_uri"));
  } catch (err) {
    if (err instanceof OAuthError) return { ok: false, error };
    throw err;
  }
  return { ok: false, error, target: targetOf(get) };
}

export async function validateAuthorizeRequest(
  params: ReadonlyMap<string, string>,
  apps: Pick<ApplicationRepository, "findByClientId">,
  resourceServers?: ResourceIndicators,
): Promise<AuthorizeValidation> {
  const get = (name: string) => params.get(name) || undefined;
  let app: ApplicationRecord;
  try {
    app = await resolveRedirect(apps, get("client_id"), get("redirect_uri"));
  } catch (err) {
    if (err instanceof OAuthError) return { ok: false, error: err };
    throw err;
  }
  const target = targetOf(get);
  try {
    // RFC 8707 §2: an unknown or malformed resource is invalid_target, sent back to the client.
    const named = resourceServers ? await resourceServers.fromParam(parseResourceParam(get(RESOURCE_PARAM))) : [];
    const request = parseRequest(get, app, target, scopesOfResources(named));
    return { ok: true, app, request: named.length > 0 ? { ...request, resources: named.map((r) => r.uri) } : request };
  } catch (err) {
    if (err instanceof OAuthError) return { ok: false, error: err, target };
    throw err;
  }
}

// The redirect_uri is trusted from here on, so these errors go back to the client.
function parseRequest(
  get: (name: string) => string | undefined,
  app: ApplicationRecord,
  target: ResponseTarget,
  resourceScopes: readonly string[],
): AuthorizeRequest {
  const type = parseResponseType(get("response_type"));
  const responseMode = parseResponseMode(get("response_mode"), type);
  target.responseMode = responseMode;
  // A request object or request_uri is opened before (authorizeSources.ts): one inside another is refused.
  if (get("request") !== undefined) throw new OAuthError("invalid_request_object", "a request object must not contain another");
  if (get("request_uri") !== undefined) throw new OAuthError("invalid_request", "request_uri cannot be combined with this request");

  const state = get("state");
  // RFC 9700 §2.1.1 (OAuth 2.1 §7.5.1): PKCE protects a code request against CSRF, as MCP clients rely on; anything else needs state.
  const pkce = type === "code" && get("code_challenge") !== undefined;
  if (!state && !pkce) throw new OAuthError("invalid_request", "missing parameter: state (it may be left out only by a code request with PKCE)");
  if (state && state.length > MAX_STATE_LENGTH) throw new OAuthError("invalid_request", `state is longer than ${MAX_STATE_LENGTH} characters`);
  // Hybrid types too (OIDC Core §3.3): they hand tokens to the browser as the implicit grant does.
  if (type !== "code" && !grantEnabled(app.grantTypes, "implicit")) {
    throw new OAuthError("unauthorized_client", "the implicit grant is not enabled for this application");
  }
  const scopes = parseScope(get("scope"), resourceScopes);
  const nonce = get("nonce");
  if (nonce && nonce.length > MAX_NONCE_LENGTH) throw new OAuthError("invalid_request", "nonce is too long");
  // OIDC Core §3.2.2.1, §3.3.2.11: an ID token from the authorization endpoint needs openid and a nonce.
  if (type.split(" ").includes("id_token")) {
    if (!scopes.includes("openid")) throw new OAuthError("invalid_scope", `response_type=${type} needs the openid scope`);
    if (!nonce) throw new OAuthError("invalid_request", `nonce is required for response_type=${type}`);
  }
  const loginHint = get("login_hint");
  if (loginHint && loginHint.length > MAX_LOGIN_HINT_LENGTH) throw new OAuthError("invalid_request", "login_hint is too long");
  const claims = parseClaimsRequest(get("claims"));
  const codeChallenge = parseChallenge(get("code_challenge"), get("code_challenge_method"));
  // Its code is redeemed with no secret: only the verifier proves who redeems it.
  if (!codeChallenge && isPublicClient(app) && type.split(" ").includes("code")) {
    throw new OAuthError("invalid_request", "a public client must send a code_challenge (PKCE, S256)");
  }
  return {
    clientId: app.clientId,
    redirectUri: target.redirectUri,
    responseType: type,
    responseMode,
    scopes,
    ...(state ? { state } : {}),
    nonce,
    ...(codeChallenge ? { codeChallenge, codeChallengeMethod: PKCE_METHOD } : {}),
    prompt: parsePrompt(get("prompt")),
    maxAge: parseMaxAge(get("max_age")),
    ...(loginHint ? { loginHint } : {}),
    ...(claims ? { claims } : {}),
    ...acrValues(get("acr_values")),
    ...dpopJkt(get("dpop_jkt")),
  };
}

/** RFC 9449 §10: a JWK SHA-256 thumbprint (RFC 7638), base64url. */
function dpopJkt(raw: string | undefined): { dpopJkt?: string } {
  if (raw === undefined) return {};
  if (!/^[A-Za-z0-9_-]{43}$/.test(raw)) throw new OAuthError("invalid_request", "dpop_jkt must be a JWK SHA-256 thumbprint (RFC 7638), base64url");
  return { dpopJkt: raw };
}

/** OIDC Core §3.1.2.1 acr_values: space-separated, in order of preference; unknown values are ignored. */
function acrValues(raw: string | undefined): { acrValues?: string[] } {
  const values = (raw ?? "").split(" ").filter((v) => v !== "").slice(0, 10);
  return values.length ? { acrValues: values } : {};
}

/** Where a response of this type goes by default: tokens never in a query string, errors about them neither. */
function defaultResponseMode(raw: string | undefined): ResponseMode {
  const canonical = canonicalResponseType(raw ?? "");
  return canonical !== "code" && (RESPONSE_TYPES as readonly string[]).includes(canonical) ? "fragment" : "query";
}

/** The response_type, its values in any order (OAuth 2.0 Multiple Response Type Encoding Practices §5). */
function parseResponseType(raw: string | undefined): ResponseType {
  if (!raw) throw new OAuthError("invalid_request", "missing parameter: response_type");
  const canonical = canonicalResponseType(raw);
  if (!(RESPONSE_TYPES as readonly string[]).includes(canonical)) {
    throw new OAuthError("unsupported_response_type", `unsupported response_type: ${echo(raw)}`);
  }
  return canonical as ResponseType;
}

/** Its values de-duplicated and sorted, as RESPONSE_TYPES lists them. */
const canonicalResponseType = (raw: string) => [...new Set(raw.split(" "))].sort().join(" ");

function parseResponseMode(raw: string | undefined, type: ResponseType): ResponseMode {
  if (!raw) return type === "code" ? "query" : "fragment";
  if (!(RESPONSE_MODES as readonly string[]).includes(raw)) {
    throw new OAuthError("invalid_request", `unsupported response_mode: ${echo(raw)}`);
  }
  // OAuth 2.0 Multiple Response Type Encoding Practices §3.0.
  if (raw === "query" && type !== "code") throw new OAuthError("invalid_request", "tokens are never sent in the query");
  return raw as ResponseMode;
}

function parsePrompt(raw: string | undefined): string[] {
  const values = [...new Set((raw ?? "").split(" ").filter((p) => PROMPTS.has(p)))];
  if (values.includes("none") && values.length > 1) {
    throw new OAuthError("invalid_request", "prompt=none cannot be combined with other prompt values");
  }
  return values;
}

function parseMaxAge(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}$/.test(raw)) throw new OAuthError("invalid_request", "max_age must be a number of seconds");
  return Number(raw);
}
