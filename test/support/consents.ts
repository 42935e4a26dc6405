import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, submit } from "./browserless.js";
import { postJson, TOKEN_PATH } from "./oauth.js";
import { postForm } from "./server.js";

/** A registered client's redirect URI: never called, the tests read the code from the Location. */
export const CONSENT_CALLBACK = "http://127.0.0.1:9999/callback";

export interface RegisteredClient {
  client_id: string;
  client_secret: string;
}

/** Register a confidential client with the refresh grant (RFC 7591), under `--client-registration open`. */
export async function registerClient(server: Pick<RunningServer, "url">, clientName: string, redirectUri = CONSENT_CALLBACK): Promise<RegisteredClient> {
  const res = await postJson(`${server.url}/api/oauth/register`, {
    redirect_uris: [redirectUri], client_name: clientName, grant_types: ["authorization_code", "refresh_token"],
  });
  if (res.status !== 201) throw new Error(`registration answered ${res.status}: ${res.text}`);
  return res.body;
}

const hiddenFields = (html: string) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));

/**
 * The signed-in browser of `jar` allows `client` on the consent page (asked
 * for with prompt=consent, allowed before or not), and the
 * client redeems the code: its refresh token, for the revocation to end.
 */
export async function allowAndRedeem(
  server: Pick<RunningServer, "url">,
  client: RegisteredClient,
  jar: CookieJar,
  scope = "openid email offline_access",
  resources: string[] = [],
): Promise<string> {
  const url = new URL(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: CONSENT_CALLBACK, scope, prompt: "consent" }));
  for (const resource of resources) url.searchParams.append("resource", resource);
  const page = await browse(url.href, jar);
  if (page.status !== 200) throw new Error(`authorize answered ${page.status} instead of the consent page`);
  const allowed = await submit(`${server.url}/login/oauth/consent`, { ...hiddenFields(await page.text()), decision: "allow" }, jar);
  const code = new URL(allowed.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (!code) throw new Error(`Allow answered ${allowed.status} without a code`);
  const tokens = await postForm(server.url + TOKEN_PATH, {
    grant_type: "authorization_code", code, redirect_uri: CONSENT_CALLBACK, client_id: client.client_id, client_secret: client.client_secret,
  });
  if (tokens.status !== 200 || !tokens.body.refresh_token) throw new Error(`the code redeemed to ${tokens.status}: ${tokens.text}`);
  return tokens.body.refresh_token;
}

/** Whether the client can still refresh with `refreshToken`. */
export async function refreshes(server: Pick<RunningServer, "url">, client: RegisteredClient, refreshToken: string): Promise<boolean> {
  const res = await postForm(server.url + TOKEN_PATH, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret });
  return res.status === 200;
}

export { CookieJar };
