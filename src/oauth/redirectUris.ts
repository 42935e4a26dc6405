import { CONSOLE_CLIENT_ID } from "./scopes.js";

/** Loopback hosts of RFC 8252 §7.3, where native apps pick a port at run time. */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]"]);

/**
 * Whether `requested` may be used as a redirect target of an application
 * that registered `registered`. The match is exact, character for character
 * (RFC 9700 §4.1.3), except that an http loopback redirect may name any port
 * (RFC 8252 §7.3) unless `anyLoopbackPort` is false.
 */
export function redirectUriAllowed(registered: readonly string[], requested: string, anyLoopbackPort = true): boolean {
  if (registered.includes(requested)) return true;
  if (!anyLoopbackPort) return false;
  const wanted = loopbackWithoutPort(requested);
  return wanted !== undefined && registered.some((uri) => loopbackWithoutPort(uri) === wanted);
}

/**
 * `redirectUriAllowed` for an application. The console's own client gets no
 * loopback port latitude: it is no native app (it lives at `<issuer>/admin/`),
 * and its codes carry the admin scope, so with a loopback issuer any other
 * local program could otherwise receive and redeem an admin's code.
 */
export function applicationRedirectAllowed(app: { clientId: string; redirectUris: readonly string[] }, requested: string): boolean {
  return redirectUriAllowed(app.redirectUris, requested, app.clientId !== CONSOLE_CLIENT_ID);
}

/**
 * RFC 9700 §2.6: authorization responses never travel in clear text, so a
 * redirect URI uses https, except on a loopback address (RFC 8252 §7.3),
 * where the response never leaves the machine. `localhost` counts here (RFC
 * 8252 §8.3 discourages it, but it is loopback), though not for the any-port
 * match below, which only the literal addresses get.
 */
export function cleartextRedirectProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined; // not a URL at all: the caller's other checks say so
  }
  if (url.protocol === "http:" && !LOOPBACK_HOSTS.has(url.hostname) && url.hostname !== "localhost") {
    return "must use https (http only on a loopback host: 127.0.0.1, [::1] or localhost)";
  }
  return undefined;
}

// The URI with its port removed, for http loopback URIs only. Both sides go
// through the same WHATWG parser a browser uses, so equal results mean the
// browser lands on the same path and query.
function loopbackWithoutPort(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" || !LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.username || url.password || url.hash) return undefined;
  url.port = "";
  return url.href;
}
