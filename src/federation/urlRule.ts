import { isIP } from "node:net";

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether a URL's host is this machine (http is allowed there: a provider on the same host). */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  if (LOOPBACK_NAMES.has(host) || host.endsWith(".localhost")) return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

export const INSECURE_URL_PROBLEM = "must use https (http only on loopback addresses, or with allowInsecureUrls: true)";

/** The https rule for a URL the service calls or sends the browser to; undefined when it passes. */
export function insecureUrlProblem(value: string, allowInsecureUrls: boolean): string | undefined {
  if (allowInsecureUrls) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol === "https:") return undefined;
  return url.protocol === "http:" && isLoopback(url) ? undefined : INSECURE_URL_PROBLEM;
}
