import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, pkcePair, signIn } from "./browserless.js";
import { TOKEN_PATH, type Tokens } from "./oauth.js";
import { postForm } from "./server.js";

/** The authorize request the console makes (code + PKCE, its scope), and the verifier that redeems its code. */
export function consoleAuthorization(server: RunningServer): { params: Record<string, string>; url: string; verifier: string } {
  const { clientId, redirectUri, scope } = server.domain.console;
  const { verifier, challenge } = pkcePair();
  const params = { client_id: clientId, redirect_uri: redirectUri, scope, code_challenge: challenge, code_challenge_method: "S256" };
  return { params, url: authorizeUrl(server.url, params), verifier };
}

/** Redeem the code the browser brought back to the console (no secret: a public client); the token response. */
export async function redeemConsoleCode(server: RunningServer, location: URL, verifier: string): Promise<Tokens> {
  const { clientId, redirectUri } = server.domain.console;
  assert.equal(location.origin + location.pathname, redirectUri);
  const code = location.searchParams.get("code");
  assert.ok(code, location.href);
  const res = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", client_id: clientId, code, redirect_uri: redirectUri, code_verifier: verifier });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as Tokens;
}

/** The code + PKCE sign-in the console makes (no secret: a public client), as `user`; returns the token response. */
export async function consoleSignIn(server: RunningServer, user: { name: string; password: string }): Promise<Tokens> {
  const { params, verifier } = consoleAuthorization(server);
  const { location } = await signIn(server, params, { username: user.name, password: user.password });
  return redeemConsoleCode(server, location, verifier);
}
