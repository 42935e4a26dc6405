import { mapProfile } from "../userMapping.js";
import { basicCredentials, errorCode, UpstreamError, type UpstreamClient } from "../upstream.js";
import type { CodeExchange, ProviderConfig, ProviderType } from "./providerType.js";

/**
 * The spec's Custom provider: the browser goes to its Auth URL with
 * client_id, redirect_uri, response_type=code, scope and state (plus a PKCE
 * challenge when the provider asks for PKCE); the code comes back to the
 * token exchange (HTTP Basic, or the credentials in the form with
 * client_secret_post), and the access token to the user lookup (Bearer),
 * whose answer is read through the provider's user mapping.
 */
export const customType: ProviderType = {
  required: ["clientId", "clientSecret", "authUrl", "scope", "tokenUrl", "userInfoUrl", "favicon"],

  authorizeUrl(config, redirectUri, state, extras) {
    const url = new URL(config.authUrl);
    const params: Record<string, string> = { client_id: config.clientId, redirect_uri: redirectUri, response_type: "code", scope: config.scope, state };
    if (extras?.codeChallenge) Object.assign(params, { code_challenge: extras.codeChallenge, code_challenge_method: "S256" });
    if (extras?.nonce) params.nonce = extras.nonce;
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    return url.href;
  },

  async signIn(upstream, config, exchange) {
    const accessToken = await exchangeCode(upstream, config, exchange);
    const body = await upstream.requestJson("userinfo", config.userInfoUrl, { method: "GET", headers: { authorization: `Bearer ${accessToken}` } });
    return mapProfile(body, config.userMapping);
  },
};

/** The token exchange of RFC 6749 §4.1.3, with the provider's client authentication; returns the access token. */
export async function exchangeCode(
  upstream: UpstreamClient,
  config: ProviderConfig,
  exchange: CodeExchange,
  headers: Record<string, string> = {},
): Promise<string> {
  return (await requestTokens(upstream, config, exchange, headers)).access_token as string;
}

/** The token answer, checked for a Bearer access token. */
export async function requestTokens(
  upstream: UpstreamClient,
  config: ProviderConfig,
  exchange: CodeExchange,
  headers: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const form = new URLSearchParams({ code: exchange.code, grant_type: "authorization_code", redirect_uri: exchange.redirectUri });
  if (exchange.codeVerifier) form.set("code_verifier", exchange.codeVerifier);
  const auth: Record<string, string> = {};
  if (config.tokenAuthMethod === "client_secret_post") {
    form.set("client_id", config.clientId);
    form.set("client_secret", exchange.clientSecret);
  } else {
    auth.authorization = basicCredentials(config.clientId, exchange.clientSecret);
  }
  const body = await upstream.requestJson("token", config.tokenUrl, {
    method: "POST",
    headers: { ...headers, ...auth, "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
    publicOnly: config.tokenUrlPublicOnly,
  });
  // Some providers answer 200 with an OAuth error body.
  if (typeof body.error === "string") throw new UpstreamError("token", `refused the code (${errorCode(body.error)})`);
  if (typeof body.access_token !== "string" || body.access_token === "") throw new UpstreamError("token", "sent no access_token");
  if (typeof body.token_type !== "string") throw new UpstreamError("token", "sent no token_type");
  // RFC 6749 §7.1: the type is case-insensitive; only Bearer can be used at UserInfo URL.
  if (body.token_type.toLowerCase() !== "bearer") {
    throw new UpstreamError("token", `sent token_type ${errorCode(body.token_type)}, not Bearer`);
  }
  // refresh_token, expires_in and scope are not needed: upstream tokens are used once and never stored.
  return body;
}
