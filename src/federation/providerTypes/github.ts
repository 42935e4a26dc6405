import { mapProfile } from "../userMapping.js";
import type { UpstreamClient } from "../upstream.js";
import { customType, exchangeCode } from "./custom.js";
import type { ProviderConfig, ProviderType } from "./providerType.js";

/** GitHub's API refuses requests without a User-Agent. */
const USER_AGENT = "identity-service";

/**
 * GitHub's OAuth app (docs.github.com, "Authorizing OAuth apps"): the token
 * endpoint answers JSON only when asked with Accept: application/json, and
 * takes the client credentials in the form; /user describes the account
 * (a numeric `id`, `login`, `name`, `email` only when public, `avatar_url`);
 * without a public email, /user/emails (scope user:email) lists them and the
 * primary verified one is used.
 */
export const githubType: ProviderType = {
  required: ["clientId", "clientSecret"],
  preset: {
    authUrl: "https://github.com/login/oauth/authorize",
    tokenUrl: "https://github.com/login/oauth/access_token",
    userInfoUrl: "https://api.github.com/user",
    emailsUrl: "https://api.github.com/user/emails",
    scope: "read:user user:email",
    favicon: "https://github.com/favicon.ico",
    userMapping: { id: "id", username: "login", displayName: "name", email: "email", avatarUrl: "avatar_url" },
  },

  authorizeUrl: customType.authorizeUrl,

  async signIn(upstream, config, exchange) {
    const accessToken = await exchangeCode(upstream, { ...config, tokenAuthMethod: "client_secret_post" }, exchange, { accept: "application/json" });
    const headers = { authorization: `Bearer ${accessToken}`, accept: "application/vnd.github+json", "user-agent": USER_AGENT };
    const profile = mapProfile(await upstream.requestJson("userinfo", config.userInfoUrl, { method: "GET", headers }), config.userMapping);
    if (profile.email === "" && config.emailsUrl) {
      const email = await primaryVerifiedEmail(upstream, config, headers);
      if (email) Object.assign(profile, { email, emailVerified: true });
    }
    return profile;
  },
};

async function primaryVerifiedEmail(upstream: UpstreamClient, config: ProviderConfig, headers: Record<string, string>): Promise<string | undefined> {
  const emails = await upstream.requestJsonArray("emails", config.emailsUrl, { method: "GET", headers });
  for (const entry of emails) {
    if (typeof entry !== "object" || entry === null) continue;
    const { email, primary, verified } = entry as Record<string, unknown>;
    if (primary === true && verified === true && typeof email === "string") return email;
  }
  return undefined;
}
