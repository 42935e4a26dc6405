import { customType } from "./custom.js";
import type { ProviderType } from "./providerType.js";

/**
 * Google's OAuth 2.0 for web server apps (developers.google.com/identity):
 * the spec's round trip against Google's endpoints, the profile from its
 * OpenID Connect UserInfo (`sub`, `name`, `email`, `email_verified`,
 * `picture`; no user name, so the email serves as one).
 */
export const googleType: ProviderType = {
  required: ["clientId", "clientSecret"],
  preset: {
    authUrl: "https://accounts.google.com/o/oauth2/v2/auth",
    tokenUrl: "https://oauth2.googleapis.com/token",
    userInfoUrl: "https://openidconnect.googleapis.com/v1/userinfo",
    scope: "openid profile email",
    favicon: "https://www.google.com/favicon.ico",
    userMapping: { id: "sub", username: "email", displayName: "name", email: "email", avatarUrl: "picture" },
  },
  authorizeUrl: customType.authorizeUrl,
  signIn: customType.signIn,
};
