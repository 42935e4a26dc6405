import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { systemClock, type Clock } from "../shared/clock.js";
import { span, tracing, type SpanAttributes } from "../shared/tracing.js";
import { namesPrivateHost, PRIVATE_TARGET_PROBLEM, isPublicAddress } from "./urlRule.js";

/** Which call to the provider failed. */
export type UpstreamStep = "token" | "userinfo" | "emails" | "discovery" | "jwks" | "id_token" | "client_metadata" | "backchannel_logout";

const STEP_NAMES: Record<UpstreamStep, string> = {
  token: "provider's token endpoint",
  userinfo: "provider's UserInfo endpoint",
  emails: "provider's emails endpoint",
  discovery: "provider's discovery document",
  jwks: "provider's JWKS",
  id_token: "provider's ID token",
  client_metadata: "client ID metadata document",
  backchannel_logout: "application's backchannelLogoutUri",
};

/**
 * A provider call that failed. `reason` is our own wording (never the
 * provider's body or any credential), so it is safe to log and to show.
 */
export class UpstreamError extends Error {
  constructor(
    readonly step: UpstreamStep,
    readonly reason: string,
    /** "invalid": the provider answered, but with something that must not sign anyone in (a bad ID token). */
    readonly kind: "unavailable" | "invalid" = "unavailable",
  ) {
    super(`the ${STEP_NAMES[step]} ${reason}`);
    this.name = "UpstreamError";
  }
}

export interface UpstreamOptions {
  /** Longest wait for each call, body included. */
  timeoutMs: number;
  /** Largest response body read. */
  maxBodyBytes: number;
  /** What caches of provider answers (OIDC discovery, JWKS) count time with. */
  clock?: Clock;
  /** How host names become addresses (tests map names to this machine); dns.lookup unless told. */
  lookup?: LookupFunction;
}

/** One call to a provider. */
export interface UpstreamRequest {
  method: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /**
   * Connect only to public addresses: for a URL that the provider's discovery
   * named, not the operator (urlRule.ts). Every address the host resolves to
   * is checked when connecting, so a name that resolves, or later rebinds, to
   * this machine or its network reaches nothing.
   */
  publicOnly?: boolean;
}

export const DEFAULT_UPSTREAM_TIMEOUT_MS = 10_000;
export const MAX_UPSTREAM_BODY_BYTES = 1024 * 1024;
/** The longest `sub` or preferred_username kept as an account's key. */
export const MAX_EXTERNAL_ID_LENGTH = 255;

/** The user as the provider describes them, read through the provider's user mapping. */
export interface UpstreamProfile {
  /** The provider's stable id for the account: with the provider, the key of the link. */
  id: string;
  /** "sub" for an id read through the mapping (or `sub`); "preferred_username" when the spec's default fell back to it. */
  idType: "sub" | "preferred_username";
  /** The user name at the provider, when it sends one. */
  username?: string;
  displayName: string;
  email: string;
  /** False when the provider says the email is not verified. */
  emailVerified?: boolean;
  avatarUrl: string;
  phone: string;
}

/**
 * A provider's answer without a value the sign-in needs: `field` is the
 * mapping's key, `path` where it was looked for. Safe to log and to show.
 */
export class MappingError extends Error {
  constructor(
    readonly field: string,
    readonly path: string,
    readonly reason: string,
  ) {
    super(`the provider's answer has no usable ${field}: ${path} ${reason}`);
    this.name = "MappingError";
  }
}

/** RFC 6749 §2.3.1: each half is form-urlencoded, then the pair is base64-encoded. */
export function basicCredentials(clientId: string, clientSecret: string): string {
  const formEncode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
  return "Basic " + Buffer.from(`${formEncode(clientId)}:${formEncode(clientSecret)}`).toString("base64");
}

/**
 * The calls to a provider, for its type's module (providerTypes/). Every
 * call has a deadline and a body size cap and never follows a redirect, so a
 * misbehaving provider costs at most one bounded request.
 */
export class UpstreamClient {
  readonly clock: Clock;
  /**
   * One pair of agents per lookup, the public-address check being one. No
   * keep-alive: a sign-in makes a few calls, and a kept socket could be one
   * the provider has closed (or, across agents, one opened without the check).
   */
  private readonly agents: Record<"open" | "publicOnly", { http: http.Agent; https: https.Agent }>;

  constructor(private readonly options: UpstreamOptions) {
    this.clock = options.clock ?? systemClock;
    const open = options.lookup ?? (dnsLookup as LookupFunction);
    const agents = (lookup: LookupFunction) => ({ http: new http.Agent({ lookup }), https: new https.Agent({ lookup }) });
    this.agents = { open: agents(open), publicOnly: agents(publicOnlyLookup(open)) };
  }

  /** The time, for what a provider type caches (epoch ms). */
  now(): number {
    return this.options.clock ? this.options.clock.now() : Date.now();
  }

  /** One request whose answer must be a 2xx JSON object (or a form, read as an object of strings). */
  async requestJson(step: UpstreamStep, url: string, init: UpstreamRequest): Promise<Record<string, unknown>> {
    const { body } = await this.request(step, url, init);
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new UpstreamError(step, "answered with something other than a JSON object");
    }
    return body as Record<string, unknown>;
  }

  /** One request whose answer must be a 2xx JSON object, with the answer's headers (for its Cache-Control). */
  async requestJsonWithHeaders(step: UpstreamStep, url: string, init: UpstreamRequest): Promise<{ body: Record<string, unknown>; headers: IncomingHttpHeaders }> {
    const { body, headers } = await this.request(step, url, init);
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new UpstreamError(step, "answered with something other than a JSON object");
    }
    return { body: body as Record<string, unknown>, headers };
  }

  /** One request whose answer must be a 2xx JSON array (GitHub's /user/emails). */
  async requestJsonArray(step: UpstreamStep, url: string, init: UpstreamRequest): Promise<unknown[]> {
    const { body } = await this.request(step, url, init);
    if (!Array.isArray(body)) throw new UpstreamError(step, "answered with something other than a JSON array");
    return body;
  }

  /**
   * POST a form; the answer's status and Retry-After, whatever the status
   * and body: the caller judges them (a relying party's back-channel logout
   * endpoint, OIDC Back-Channel Logout 1.0 §2.8, oauth/logoutAnswers.ts).
   * No answer, or a redirect, still throws.
   */
  async postForm(step: UpstreamStep, url: string, form: Record<string, string>, publicOnly: boolean): Promise<{ status: number; retryAfter?: string }> {
    const init: UpstreamRequest = {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
      publicOnly,
    };
    const { status, headers } = await this.request(step, url, init, false);
    return { status, retryAfter: headers["retry-after"] };
  }

  /** The answer as `call` gives it, in a span when tracing (the step and the host, never the URL's query). */
  private request(step: UpstreamStep, url: string, init: UpstreamRequest, parse = true): Promise<UpstreamAnswer> {
    if (!tracing()) return this.call(step, url, init, parse);
    const attributes: SpanAttributes = { "identity.upstream.step": step, "http.request.method": init.method };
    try {
      const target = new URL(url);
      attributes["server.address"] = target.hostname;
      if (target.port) attributes["server.port"] = Number(target.port);
    } catch {
      // not a URL: the call says so in the span's error
    }
    return span(`upstream ${step}`, "client", attributes, () => this.call(step, url, init, parse));
  }

  /** The parsed body of a 2xx answer (undefined when it is neither JSON nor a form), and its headers; with `parse` false, the answer whatever its status (a redirect still throws), its body not parsed. */
  private async call(step: UpstreamStep, url: string, init: UpstreamRequest, parse = true): Promise<UpstreamAnswer> {
    const { timeoutMs, maxBodyBytes } = this.options;
    const signal = AbortSignal.timeout(timeoutMs);
    let res: IncomingMessage;
    let text: string;
    try {
      res = await this.send(new URL(url), init, signal);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.destroy();
        throw new UpstreamError(step, `answered with a redirect (HTTP ${status}), which is not followed`);
      }
      text = await readLimited(res, maxBodyBytes, step);
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      if (signal.aborted) throw new UpstreamError(step, `gave no complete answer within ${timeoutMs} ms`);
      const code = (err as { code?: unknown })?.code ?? (err as { cause?: { code?: unknown } })?.cause?.code;
      if (code === PRIVATE_TARGET_CODE) throw new UpstreamError(step, PRIVATE_TARGET_PROBLEM);
      throw new UpstreamError(step, `could not be reached${typeof code === "string" ? ` (${code})` : ""}`);
    }
    const status = res.statusCode ?? 0;
    if (!parse) return { body: undefined, headers: res.headers, status };
    let body: unknown;
    if (/^application\/x-www-form-urlencoded\b/i.test(res.headers["content-type"] ?? "")) {
      // Some token endpoints (GitHub's without Accept: application/json) answer as a form.
      body = Object.fromEntries(new URLSearchParams(text));
    } else {
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    }
    const object = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    if (status < 200 || status > 299) {
      const code = typeof object?.error === "string" ? ` (${errorCode(object.error)})` : "";
      throw new UpstreamError(step, `answered HTTP ${status}${code}`);
    }
    return { body, headers: res.headers, status };
  }

  /** The request, its answer's head once it arrives; never a redirect followed (node:http follows none). */
  private send(target: URL, init: UpstreamRequest, signal: AbortSignal): Promise<IncomingMessage> {
    const secure = target.protocol === "https:";
    if (!secure && target.protocol !== "http:") return Promise.reject(new Error(`unsupported protocol ${target.protocol}`));
    // An address literal is never looked up, so the lookup's check cannot see it.
    if (init.publicOnly && namesPrivateHost(target)) return Promise.reject(Object.assign(new Error(PRIVATE_TARGET_PROBLEM), { code: PRIVATE_TARGET_CODE }));
    const agents = this.agents[init.publicOnly ? "publicOnly" : "open"];
    const headers: Record<string, string> = { accept: "application/json", ...init.headers };
    if (init.body !== undefined) headers["content-length"] = String(Buffer.byteLength(init.body));
    return new Promise((resolve, reject) => {
      const request = (secure ? https : http).request(target, { method: init.method, headers, signal, agent: secure ? agents.https : agents.http }, resolve);
      request.on("error", reject);
      request.end(init.body);
    });
  }
}

const PRIVATE_TARGET_CODE = "ERR_PRIVATE_TARGET";

interface UpstreamAnswer {
  body: unknown;
  headers: IncomingHttpHeaders;
  status: number;
}

/** `lookup`, refusing a host any of whose addresses is not public (one bad answer is enough: the connection may try each). */
function publicOnlyLookup(lookup: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, found) => {
      const addresses = (Array.isArray(found) ? found : []) as LookupAddress[];
      if (err || addresses.length === 0) return callback(err ?? Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
      if (!addresses.every((a) => isPublicAddress(a.address))) {
        return callback(Object.assign(new Error(PRIVATE_TARGET_PROBLEM), { code: PRIVATE_TARGET_CODE }), "", 0);
      }
      if (options.all) return (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** The body as text, refusing more than `limit` bytes whether or not Content-Length says so. */
async function readLimited(res: IncomingMessage, limit: number, step: UpstreamStep): Promise<string> {
  const tooLarge = () => new UpstreamError(step, `answered with more than ${limit} bytes`);
  if (Number(res.headers["content-length"] ?? 0) > limit) {
    res.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    // Leaving the loop destroys the stream: the rest is never downloaded.
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A provider's error code, trimmed to something safe to log and show. */
export function errorCode(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, "").slice(0, 64);
  return clean || "no code";
}
