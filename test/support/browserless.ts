import { createHash, randomBytes } from "node:crypto";
import type { RunningServer } from "../../src/app/server.js";
import { TEST_APP, TEST_USER } from "./server.js";

/** The cookies of one simulated browser, for driving the login form with fetch. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair!.indexOf("=");
      this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  set(name: string, value: string): this {
    this.cookies.set(name, value);
    return this;
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

/** GET without following redirects, with the jar's cookies. */
export async function browse(url: string, jar: CookieJar): Promise<Response> {
  const res = await fetch(url, { redirect: "manual", headers: { cookie: jar.header() } });
  jar.store(res);
  return res;
}

/** POST a form without following redirects, with the jar's cookies. */
export async function submit(url: string, fields: Record<string, string>, jar: CookieJar): Promise<Response> {
  const res = await fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  jar.store(res);
  return res;
}

/** The authorize URL of the test application, with defaults a test can override or drop (undefined). */
export function authorizeUrl(base: string, params: Record<string, string | undefined> = {}): string {
  const all: Record<string, string | undefined> = {
    client_id: TEST_APP.clientId,
    redirect_uri: TEST_APP.redirectUris[0],
    response_type: "code",
    scope: "openid",
    state: "state-123",
    ...params,
  };
  const url = new URL("/login/oauth/authorize", base);
  for (const [k, v] of Object.entries(all)) if (v !== undefined) url.searchParams.set(k, v);
  return url.href;
}

/** The hidden fields of the login form in a page. */
export function loginFormFields(html: string): { request: string; csrf_token: string } {
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];
  const request = field("request");
  const csrf = field("csrf_token");
  if (!request || !csrf) throw new Error("no login form in the page");
  return { request, csrf_token: csrf };
}

/** The fields of the sign-out confirmation form in a page (RP-Initiated Logout §2), as the browser would post them. */
export function signOutFormFields(html: string): Record<string, string> {
  const form = /<form method="post" action="\/api\/logout"[^>]*>([\s\S]*?)<\/form>/.exec(html)?.[1];
  if (!form) throw new Error("no sign-out form in the page");
  const unescape = (value: string) => value.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
  return Object.fromEntries([...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [name!, unescape(value!)]));
}

/** Ask to sign out with `params` and confirm on the page, as a user would. Returns the answer to the confirmation. */
export async function confirmSignOut(base: string, jar: CookieJar, params: Record<string, string> = {}): Promise<Response> {
  const page = await browse(`${base}/api/logout?${new URLSearchParams(params)}`, jar);
  if (page.status !== 200) throw new Error(`sign-out answered ${page.status}`);
  return submit(`${base}/api/logout`, signOutFormFields(await page.text()), jar);
}

/**
 * Start an authorize request and sign in through the login form, as a
 * browser would. Returns the Location the service redirects to.
 */
export async function signIn(
  server: Pick<RunningServer, "url">,
  params: Record<string, string | undefined> = {},
  credentials = { username: TEST_USER.name, password: TEST_USER.password },
  jar = new CookieJar(),
): Promise<{ location: URL; jar: CookieJar }> {
  const page = await browse(authorizeUrl(server.url, params), jar);
  if (page.status !== 200) throw new Error(`authorize answered ${page.status} ${page.headers.get("location") ?? ""}`);
  const res = await submit(`${server.url}/login`, { ...loginFormFields(await page.text()), ...credentials }, jar);
  if (res.status !== 303) throw new Error(`login answered ${res.status}`);
  return { location: new URL(res.headers.get("location")!), jar };
}

/** A PKCE verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}
