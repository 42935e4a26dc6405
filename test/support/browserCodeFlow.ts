import * as oidc from "openid-client";
import type { Page } from "playwright-core";

/**
 * Start an authorization code flow with PKCE, state and nonce in `page`, as
 * openid-client builds it for `app` (with `extra` parameters); the returned function waits for the
 * browser to land on `callbackUrl` and redeems the code there with
 * openid-client, answering the ID token's claims.
 */
export async function beginCodeFlow(page: Page, app: oidc.Configuration, callbackUrl: string, extra: Record<string, string> = {}): Promise<() => Promise<oidc.IDToken>> {
  const verifier = oidc.randomPKCECodeVerifier();
  const checks = { pkceCodeVerifier: verifier, expectedState: oidc.randomState(), expectedNonce: oidc.randomNonce(), idTokenExpected: true };
  const url = oidc.buildAuthorizationUrl(app, {
    redirect_uri: callbackUrl,
    scope: "openid",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state: checks.expectedState,
    nonce: checks.expectedNonce,
    ...extra,
  });
  await page.goto(url.href);
  return async () => {
    await page.waitForURL((u) => u.href.startsWith(callbackUrl));
    return (await oidc.authorizationCodeGrant(app, new URL(page.url()), checks)).claims()!;
  };
}

/** Fill the sign-in form with `user`'s name and password and submit it. */
export async function typePassword(page: Page, user: { name: string; password: string }): Promise<void> {
  await page.getByLabel("Username").fill(user.name);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}
