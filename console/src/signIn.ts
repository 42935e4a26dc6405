import * as oauth from "oauth4webapi";
import type { ShellSettings } from "./shell.js";

/** What a signed-in console holds: the access token for the admin RPCs. */
export interface Session {
  accessToken: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  scope: string;
  /** Who signed in, from the ID token. */
  userName: string;
  /** The ID token: at sign-out it tells the service which session of which client ends (no second "Sign out?" page). */
  idToken?: string;
}

/** What the browser keeps while it is away at the authorization endpoint. */
interface PendingSignIn {
  state: string;
  codeVerifier: string;
  /** The console page (its hash route) to come back to. */
  returnTo: string;
}

const SESSION_KEY = "identity-console.session";
const PENDING_KEY = "identity-console.pending";
/** How long sign-out waits for the revocation before it goes on without it. */
const REVOCATION_TIMEOUT_MS = 5_000;

/**
 * The console is a public client of this service: authorization code + PKCE
 * (S256) through oauth4webapi. The token lives in sessionStorage, so it ends
 * with the tab. The service is reached on this page's origin (the CSP's
 * connect-src 'self'); tokens name the issuer it was given.
 */
export class ConsoleSignIn {
  private readonly server: oauth.AuthorizationServer;
  private readonly client: oauth.Client;

  constructor(private readonly settings: ShellSettings) {
    this.server = {
      issuer: settings.issuer,
      authorization_endpoint: new URL("/login/oauth/authorize", location.origin).href,
      token_endpoint: new URL("/api/login/oauth/access_token", location.origin).href,
      revocation_endpoint: new URL("/api/login/oauth/revoke", location.origin).href,
    };
    this.client = { client_id: settings.clientId };
  }

  /** The stored session, while its token is still good for a minute. */
  current(): Session | undefined {
    const session = this.stored();
    return session && session.expiresAt - 60_000 > Date.now() ? session : undefined;
  }

  private stored(): Session | undefined {
    const stored = sessionStorage.getItem(SESSION_KEY);
    return stored ? (JSON.parse(stored) as Session) : undefined;
  }

  /** Whether this page load is the authorization endpoint's answer. */
  isCallback(url: URL): boolean {
    return url.searchParams.has("code") || url.searchParams.has("error");
  }

  /** Off to the authorization endpoint, once: several calls refused at once start one sign-in, not one each writing its state over the last's. */
  redirect(returnTo = location.hash): Promise<never> {
    this.leaving ??= this.leave(returnTo);
    return this.leaving;
  }

  private leaving?: Promise<never>;

  /** location.replace: the empty shell stays out of the history. */
  private async leave(returnTo: string): Promise<never> {
    sessionStorage.removeItem(SESSION_KEY);
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const pending: PendingSignIn = { state: oauth.generateRandomState(), codeVerifier, returnTo };
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
    const url = new URL(this.server.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: this.settings.clientId,
      redirect_uri: this.settings.redirectUri,
      scope: this.settings.scope,
      state: pending.state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
    }).toString();
    location.replace(url.href);
    return new Promise<never>(() => {});
  }

  /** Exchange the code this page was given, and clean the URL of it. */
  async complete(url: URL): Promise<Session> {
    const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? "null") as PendingSignIn | null;
    sessionStorage.removeItem(PENDING_KEY);
    history.replaceState(null, "", this.settings.redirectUri + (pending?.returnTo ?? ""));
    if (!pending) throw new Error("This sign-in was not started here. Reload the console to sign in again.");
    const params = oauth.validateAuthResponse(this.server, this.client, url, pending.state);
    const response = await oauth.authorizationCodeGrantRequest(
      this.server,
      this.client,
      oauth.None(),
      params,
      this.settings.redirectUri,
      pending.codeVerifier,
      // Same origin as the page; plain http only where the service itself runs on it (development, tests).
      { [oauth.allowInsecureRequests]: location.protocol === "http:" },
    );
    const result = await oauth.processAuthorizationCodeResponse(this.server, this.client, response);
    const claims = oauth.getValidatedIdTokenClaims(result);
    const session: Session = {
      accessToken: result.access_token,
      expiresAt: Date.now() + (result.expires_in ?? 3600) * 1000,
      scope: result.scope ?? "",
      userName: String(claims?.preferred_username ?? claims?.name ?? claims?.sub ?? ""),
      idToken: result.id_token,
    };
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
    return session;
  }

  /**
   * Forget the tokens here, revoke the access token, then end the service's
   * browser session: with the ID token as the hint (RP-Initiated Logout), at
   * once and back to the console, which then asks to sign in; without one,
   * on its sign-out page. Posted, so the ID token stays out of URLs, logs and
   * the history. Once: a second click while the first is under way changes
   * nothing.
   */
  signOut(): Promise<void> {
    this.signingOut ??= this.endSession();
    return this.signingOut;
  }

  private signingOut?: Promise<void>;

  private async endSession(): Promise<void> {
    const session = this.stored();
    sessionStorage.removeItem(SESSION_KEY);
    if (session) await this.revoke(session.accessToken);
    const idToken = session?.idToken;
    if (!idToken) return location.assign("/api/logout");
    const form = document.createElement("form");
    form.method = "post";
    form.action = "/api/logout";
    const fields = { id_token_hint: idToken, post_logout_redirect_uri: this.settings.redirectUri, client_id: this.settings.clientId };
    for (const [name, value] of Object.entries(fields)) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.append(input);
    }
    document.body.append(form);
    form.submit();
  }

  /**
   * RFC 7009 as a public client (client_id, no secret), so a copy of the
   * token dies with the sign-out instead of living out its hour. Best
   * effort: a refusal, an unreachable service or one slower than a few
   * seconds does not hold the sign-out back.
   */
  private async revoke(accessToken: string): Promise<void> {
    try {
      const response = await oauth.revocationRequest(this.server, this.client, oauth.None(), accessToken, {
        additionalParameters: { token_type_hint: "access_token" },
        signal: AbortSignal.timeout(REVOCATION_TIMEOUT_MS),
        [oauth.allowInsecureRequests]: location.protocol === "http:",
      });
      await oauth.processRevocationResponse(response);
    } catch {
      // The token is gone from this tab either way; it still expires on its own.
    }
  }
}
