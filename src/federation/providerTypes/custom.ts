import { basicCredentials, errorCode, MAX_EXTERNAL_ID_LENGTH, UpstreamError, type UpstreamClient, type UpstreamProfile } from "../upstream.js";
import type { CodeExchange, ProviderConfig, ProviderType } from "./providerType.js";

/**
 * The spec's Custom provider: the browser goes to its Auth URL with
 * client_id, redirect_uri, response_type=code, scope and state; the code
 * comes back to the token exchange (HTTP Basic, form fields code, grant_type
 * and redirect_uri), and the access token to the user lookup (Bearer).
 */
export const customType: ProviderType = {
  authorizeUrl(config, redirectUri, state) {
    const url = new URL(config.authUrl);
    const params = { client_id: config.clientId, redirect_uri: redirectUri, response_type: "code", scope: config.scope, state };
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    return url.href;
  },

  async signIn(upstream, config, exchange) {
    const accessToken = await exchangeCode(upstream, config, exchange);
    return userInfo(upstream, config.userInfoUrl, accessToken);
  },
};

async function exchangeCode(upstream: UpstreamClient, config: ProviderConfig, exchange: CodeExchange): Promise<string> {
  const body = await upstream.requestJson("token", config.tokenUrl, {
    method: "POST",
    headers: {
      authorization: basicCredentials(config.clientId, exchange.clientSecret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ code: exchange.code, grant_type: "authorization_code", redirect_uri: exchange.redirectUri }).toString(),
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
  return body.access_token;
}

async function userInfo(upstream: UpstreamClient, userInfoUrl: string, accessToken: string): Promise<UpstreamProfile> {
  const body = await upstream.requestJson("userinfo", userInfoUrl, { method: "GET", headers: { authorization: `Bearer ${accessToken}` } });
  const text = (field: string): string => {
    const value = body[field];
    if (typeof value !== "string") throw new UpstreamError("userinfo", `sent no ${field}`);
    return value;
  };
  const profile: UpstreamProfile = {
    name: text("name"),
    preferredUsername: text("preferred_username"),
    email: text("email"),
    picture: text("picture"),
  };
  if (profile.preferredUsername === "") throw new UpstreamError("userinfo", "sent an empty preferred_username");
  const sub = body.sub;
  if (typeof sub === "string" && sub !== "") profile.sub = sub;
  else if (typeof sub === "number" && Number.isSafeInteger(sub)) profile.sub = String(sub);
  else if (sub !== undefined && sub !== null) throw new UpstreamError("userinfo", "sent a sub that is neither a string nor an integer");
  if ((profile.sub ?? profile.preferredUsername).length > MAX_EXTERNAL_ID_LENGTH) {
    throw new UpstreamError("userinfo", `sent an account id longer than ${MAX_EXTERNAL_ID_LENGTH} characters`);
  }
  if (typeof body.email_verified === "boolean") profile.emailVerified = body.email_verified;
  return profile;
}
