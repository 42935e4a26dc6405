import { isLoopback, namesPrivateHost } from "../federation/urlRule.js";
import { InvalidInputError, optionalString } from "./validation.js";

const FIELD = "backchannelLogoutUri";

/** The URI as given, syntax only: "" clears it; otherwise an absolute http(s) URL without a fragment (Back-Channel Logout 1.0 §2.2). */
export function optionalBackchannelLogoutUri(raw: unknown): string | undefined {
  const value = optionalString(raw, FIELD, 2000);
  if (!value) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidInputError(FIELD, "is not an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new InvalidInputError(FIELD, "must be an https URL");
  if (url.hash || value.includes("#")) throw new InvalidInputError(FIELD, "must not have a fragment (Back-Channel Logout 1.0 §2.2)");
  return value;
}

/**
 * Where the service may POST logout tokens: https, or http on a loopback
 * host; an address literal (or localhost name) off the public internet only
 * with allowPrivateBackchannelLogoutUri, loopback excepted. A host name is
 * held to the same rule when the POST connects (oauth/backchannelLogout.ts).
 * Undefined when it passes.
 */
export function backchannelLogoutUriProblem(value: string, allowPrivate: boolean): string | undefined {
  if (!value) return undefined;
  const url = new URL(value);
  const loopback = isLoopback(url);
  if (url.protocol === "http:" && !loopback) return "must use https (http only on a loopback host)";
  if (!loopback && !allowPrivate && namesPrivateHost(url)) {
    return "targets a private or link-local address: set allowPrivateBackchannelLogoutUri: true to allow it";
  }
  return undefined;
}
