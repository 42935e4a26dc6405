import type { Clock } from "../shared/clock.js";
import { span, tracing, type SpanAttributes } from "../shared/tracing.js";

/** Which call to the provider failed. */
export type UpstreamStep = "token" | "userinfo" | "emails" | "discovery" | "jwks" | "id_token";

const STEP_NAMES: Record<UpstreamStep, string> = {
  token: "token endpoint",
  userinfo: "UserInfo endpoint",
  emails: "emails endpoint",
  discovery: "discovery document",
  jwks: "JWKS",
  id_token: "ID token",
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
    super(`the provider's ${STEP_NAMES[step]} ${reason}`);
    this.name = "UpstreamError";
  }
}

export interface UpstreamOptions {
  /** Longest wait for each call, body included. */
  timeoutMs: number;
  /** Largest response body read. */
  maxBodyBytes: number;
  /** What the provider types' caches (OIDC discovery and JWKS) read the time from; the system clock unless given. */
  clock?: Clock;
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
  constructor(private readonly options: UpstreamOptions) {}

  /** The time, for what a provider type caches (epoch ms). */
  now(): number {
    return this.options.clock ? this.options.clock.now() : Date.now();
  }

  /** One request whose answer must be a 2xx JSON object (or a form, read as an object of strings). */
  async requestJson(step: UpstreamStep, url: string, init: RequestInit): Promise<Record<string, unknown>> {
    const body = await this.request(step, url, init);
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new UpstreamError(step, "answered with something other than a JSON object");
    }
    return body as Record<string, unknown>;
  }

  /** One request whose answer must be a 2xx JSON array (GitHub's /user/emails). */
  async requestJsonArray(step: UpstreamStep, url: string, init: RequestInit): Promise<unknown[]> {
    const body = await this.request(step, url, init);
    if (!Array.isArray(body)) throw new UpstreamError(step, "answered with something other than a JSON array");
    return body;
  }

  /** The parsed body of a 2xx answer, in a span when tracing (the step and the host, never the URL's query). */
  private request(step: UpstreamStep, url: string, init: RequestInit): Promise<unknown> {
    if (!tracing()) return this.call(step, url, init);
    const attributes: SpanAttributes = { "identity.upstream.step": step, "http.request.method": init.method ?? "GET" };
    try {
      const target = new URL(url);
      attributes["server.address"] = target.hostname;
      if (target.port) attributes["server.port"] = Number(target.port);
    } catch {
      // not a URL: fetch says so in the span's error
    }
    return span(`upstream ${step}`, "client", attributes, () => this.call(step, url, init));
  }

  /** The parsed body of a 2xx answer; undefined when it is neither JSON nor a form. */
  private async call(step: UpstreamStep, url: string, init: RequestInit): Promise<unknown> {
    const { timeoutMs, maxBodyBytes } = this.options;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        ...init,
        headers: { accept: "application/json", ...init.headers },
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        throw new UpstreamError(step, `answered with a redirect (HTTP ${res.status}), which is not followed`);
      }
      text = await readLimited(res, maxBodyBytes, step);
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      const name = (err as Error)?.name;
      if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError(step, `gave no complete answer within ${timeoutMs} ms`);
      const code = (err as { cause?: { code?: unknown } })?.cause?.code;
      throw new UpstreamError(step, `could not be reached${typeof code === "string" ? ` (${code})` : ""}`);
    }
    let body: unknown;
    if (/^application\/x-www-form-urlencoded\b/i.test(res.headers.get("content-type") ?? "")) {
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
    if (!res.ok) {
      const code = typeof object?.error === "string" ? ` (${errorCode(object.error)})` : "";
      throw new UpstreamError(step, `answered HTTP ${res.status}${code}`);
    }
    return body;
  }
}

/** The body as text, refusing more than `limit` bytes whether or not Content-Length says so. */
async function readLimited(res: Response, limit: number, step: UpstreamStep): Promise<string> {
  const tooLarge = () => new UpstreamError(step, `answered with more than ${limit} bytes`);
  if (Number(res.headers.get("content-length") ?? 0) > limit) {
    await res.body?.cancel();
    throw tooLarge();
  }
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    // Leaving the loop cancels the stream: the rest is never downloaded.
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
