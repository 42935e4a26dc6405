import type { ResourceRepository } from "../store/resources.js";
import { echo, OAuthError } from "./errors.js";
import type { ResourceRecord } from "../shared/model.js";

/**
 * RFC 8707 resource indicators. The `resource` parameter may repeat; the
 * doors hand it on as one string, its values joined by spaces (an absolute
 * URI holds no space, and a value that does is refused before joining).
 */
export const RESOURCE_PARAM = "resource";

/** The most `resource` values one request may name. */
export const MAX_RESOURCES = 10;

/**
 * The resource URI as compared and stored: WHATWG-serialised, so
 * `https://api.example.com` and `https://api.example.com/` are one resource.
 * Undefined when it is no absolute URI or has a fragment (RFC 8707 §2).
 */
export function canonicalResourceUri(raw: string): string | undefined {
  if (raw.includes("#")) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  return url.href;
}

/** The URIs of an authorize request's `resource` values (joined by spaces as its parameters are read). */
export function parseResourceParam(raw: string | undefined): string[] {
  return parseResourceValues((raw ?? "").split(" ").filter((v) => v.length > 0));
}

/** The URIs a request named, canonical and de-duplicated; `invalid_target` for one that is not absolute or has a fragment. */
export function parseResourceValues(values: readonly string[]): string[] {
  for (const value of values) {
    if (value === "" || /\s/.test(value)) throw new OAuthError("invalid_target", "a resource must be an absolute URI (RFC 8707 §2)");
  }
  if (values.length > MAX_RESOURCES) throw new OAuthError("invalid_target", `at most ${MAX_RESOURCES} resources may be named`);
  const uris = values.map((value) => {
    const uri = canonicalResourceUri(value);
    // RFC 8707 §2: an absolute URI, which "MUST NOT include a fragment component".
    if (uri === undefined) throw new OAuthError("invalid_target", `resource ${echo(value)} is not an absolute URI without a fragment`);
    return uri;
  });
  return [...new Set(uris)];
}

/**
 * RFC 8707 §2.2: the resources of a later token of a grant, the requested
 * ones when they are among those granted, all granted when none is asked;
 * anything beyond them is `invalid_target`: a code exchange or a refresh may
 * narrow the audience, never widen it.
 */
export function narrowResources(granted: readonly string[], requested: readonly string[]): string[] {
  if (requested.length === 0) return [...granted];
  const wider = requested.find((uri) => !granted.includes(uri));
  if (wider !== undefined) {
    throw new OAuthError("invalid_target", `resource ${echo(wider)} was not granted; a token of this grant may only narrow its resources`);
  }
  return [...requested];
}

/** The access token's `aud` (RFC 8707 §2, RFC 9068 §3): its resource URI or URIs, else its client, as before. */
export function audienceOf(resources: readonly string[] | undefined, clientId: string): string | string[] {
  if (!resources || resources.length === 0) return clientId;
  return resources.length === 1 ? resources[0]! : [...resources];
}

/** The registered resource servers, as the grants and the authorize endpoint check a request's URIs against them. */
export class ResourceIndicators {
  constructor(private readonly repo: Pick<ResourceRepository, "findByUris">) {}

  /** The named resources, each registered; an unknown one is `invalid_target` (RFC 8707 §2). */
  async resolve(uris: readonly string[]): Promise<ResourceRecord[]> {
    if (uris.length === 0) return [];
    const found = await this.repo.findByUris(uris);
    const unknown = uris.find((uri) => !found.some((r) => r.uri === uri));
    if (unknown !== undefined) throw new OAuthError("invalid_target", `resource ${echo(unknown)} is not a resource server this service issues tokens for`);
    return uris.map((uri) => found.find((r) => r.uri === uri)!);
  }

  /** Parse the parameter and check each URI is registered. */
  async fromParam(values: readonly string[]): Promise<ResourceRecord[]> {
    return this.resolve(parseResourceValues(values));
  }
}

/** The scope names the resources understand, which a request naming them may be granted beside the service's own. */
export const scopesOfResources = (resources: readonly ResourceRecord[]): string[] => resources.flatMap((r) => r.scopes.map((s) => s.name));
