import { createRemoteJWKSet } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, pkcePair, submit } from "./browserless.js";
import { LogoutReceiver, verifyLogoutToken, type LogoutTokenClaims } from "./logoutTokens.js";
import { basicAuth, postForm, TEST_APP, TEST_USER } from "./server.js";

/** A confidential application as a config file lists it. */
export interface RelyingParty {
  name: string;
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  grantTypes: string[];
  refreshExpireInHours?: number;
  backchannelLogoutUri?: string;
  backchannelLogoutSessionRequired?: boolean;
}

/**
 * Three relying parties on one receiver: two told of sign-outs at paths of
 * their own (the first requires `sid`), one with no back-channel URI.
 */
export function relyingParties(receiver: LogoutReceiver): { told: RelyingParty[]; silent: RelyingParty; byPath: Map<string, string> } {
  const told: RelyingParty[] = [
    { ...TEST_APP, backchannelLogoutUri: receiver.url("/rp1"), backchannelLogoutSessionRequired: true },
    {
      name: "rp2",
      clientId: "client-rp2",
      clientSecret: "secret-of-client-rp2-0123",
      redirectUris: ["http://127.0.0.1:9999/rp2"],
      grantTypes: ["authorization_code", "refresh_token"],
      refreshExpireInHours: 1,
      backchannelLogoutUri: receiver.url("/rp2"),
    },
  ];
  const silent: RelyingParty = { name: "rp3", clientId: "client-rp3", clientSecret: "secret-of-client-rp3-0123", redirectUris: ["http://127.0.0.1:9999/rp3"], grantTypes: [] };
  const byPath = new Map(told.map((rp) => [new URL(rp.backchannelLogoutUri!).pathname, rp.clientId]));
  return { told, silent, byPath };
}

/** Makes `receiver` check each token as the relying party its path belongs to would (jose, the issuer's published keys). */
export function verifyAs(receiver: LogoutReceiver, server: Pick<RunningServer, "url" | "issuer">, byPath: Map<string, string>, seen = new Set<string>()): void {
  const keys = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks`));
  receiver.verify = (token: string, path: string): Promise<LogoutTokenClaims> =>
    verifyLogoutToken(token, { issuer: server.issuer, audience: byPath.get(path) ?? "nobody", keys, seen });
}

export interface SignedInTokens {
  id_token: string;
  refresh_token?: string;
  access_token: string;
}

/**
 * The code flow for `rp` in the browser `jar`: the login form when the
 * browser has no session (as `user`), straight through when it has; then
 * the code redeemed. Returns the tokens.
 */
export async function codeFlow(
  server: Pick<RunningServer, "url">,
  rp: RelyingParty,
  jar: CookieJar,
  user: { name: string; password: string } = TEST_USER,
  extra: Record<string, string> = {},
): Promise<SignedInTokens> {
  const { verifier, challenge } = pkcePair();
  const params = { client_id: rp.clientId, redirect_uri: rp.redirectUris[0], scope: "openid offline_access", code_challenge: challenge, code_challenge_method: "S256", ...extra };
  let res = await browse(authorizeUrl(server.url, params), jar);
  if (res.status === 200) res = await submit(`${server.url}/login`, { ...loginFormFields(await res.text()), username: user.name, password: user.password }, jar);
  const location = res.headers.get("location");
  const code = location ? new URL(location).searchParams.get("code") : null;
  if (!code) throw new Error(`no code: ${res.status} ${location ?? ""}`);
  const token = await postForm(
    `${server.url}/api/login/oauth/access_token`,
    { grant_type: "authorization_code", code, redirect_uri: rp.redirectUris[0]!, code_verifier: verifier },
    { authorization: basicAuth(rp.clientId, rp.clientSecret) },
  );
  if (token.status !== 200) throw new Error(`token endpoint answered ${token.status} ${token.text}`);
  return token.body as SignedInTokens;
}

/** A fresh browser. */
export const aBrowser = () => new CookieJar();
