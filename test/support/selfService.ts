import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, type CookieJar } from "./browserless.js";

/** GET without following redirects, with the jar's cookies and `headers` (an X-Forwarded-For behind a trusted proxy, say). */
export async function browse(url: string, jar: CookieJar, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(url, { redirect: "manual", headers: { ...headers, cookie: jar.header() } });
  jar.store(res);
  return res;
}

/** POST a form without following redirects, with the jar's cookies and `headers`. */
export async function submit(url: string, fields: Record<string, string>, jar: CookieJar, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { ...headers, cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  jar.store(res);
  return res;
}

const unescape = (value: string) => value.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));

/** The hidden fields of the first form in a page, as a browser would post them. */
export function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [name!, unescape(value!)]));
}

/** The href of the link with this text in a page, or undefined. */
export function linkHref(html: string, text: string): string | undefined {
  const found = new RegExp(`<a href="([^"]+)">${text}</a>`).exec(html)?.[1];
  return found && unescape(found);
}

/** Start an authorize request, follow the login page's "Create account", and return the sign-up form's hidden fields. */
export async function openSignUp(server: Pick<RunningServer, "url">, jar: CookieJar, params: Record<string, string | undefined> = {}): Promise<Record<string, string>> {
  const login = await (await browse(authorizeUrl(server.url, params), jar)).text();
  const href = linkHref(login, "Create account");
  if (!href) throw new Error("the login page offers no sign-up");
  const page = await browse(`${server.url}${href}`, jar);
  if (page.status !== 200) throw new Error(`the sign-up form answered ${page.status}`);
  return hiddenFields(await page.text());
}

/** Fill in and send the sign-up form. */
export async function signUp(
  server: Pick<RunningServer, "url">,
  jar: CookieJar,
  account: { username: string; email: string; password: string; passwordAgain?: string },
  params: Record<string, string | undefined> = {},
  headers: Record<string, string> = {},
): Promise<Response> {
  const hidden = await openSignUp(server, jar, params);
  const { passwordAgain, ...rest } = account;
  return submit(`${server.url}/signup`, { ...hidden, ...rest, password_again: passwordAgain ?? account.password }, jar, headers);
}

/** Open the "Forgot password?" page and ask for a link for `identifier`. */
export async function askReset(server: Pick<RunningServer, "url">, jar: CookieJar, identifier: string, headers: Record<string, string> = {}): Promise<Response> {
  const page = await browse(`${server.url}/login/forgot`, jar);
  if (page.status !== 200) throw new Error(`the forgot-password page answered ${page.status}`);
  return submit(`${server.url}/login/forgot`, { ...hiddenFields(await page.text()), identifier }, jar, headers);
}

/** Open a mailed link (its GET shows a form) and send that form with `fields`. */
export async function followLink(link: string, jar: CookieJar, fields: Record<string, string> = {}): Promise<Response> {
  const page = await browse(link, jar);
  if (page.status !== 200) return page;
  const url = new URL(link);
  return submit(`${url.origin}${url.pathname}`, { ...hiddenFields(await page.text()), ...fields }, jar);
}
