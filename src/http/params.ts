import type { IncomingMessage } from "node:http";
import { visit } from "jsonc-parser";
import { OAuthError } from "../oauth/errors.js";
import { readRequestBody } from "./requestBody.js";

/** Reads the body up to `limit` bytes, answering 413 beyond it. */
export async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) throw tooLarge(limit);
  const body = await readRequestBody(
    req,
    (_chunks, size) => (size > limit ? tooLarge(limit) : undefined),
    // The client went away mid-body: its fault, and no one is left to read the answer.
    () => new OAuthError("invalid_request", "the request body ended before its declared length"),
  );
  return body.toString("utf8");
}

function tooLarge(limit: number): OAuthError {
  return new OAuthError("invalid_request", `request body exceeds ${limit} bytes`, 413);
}

/**
 * The parameters a request may repeat: RFC 8707 §2's `resource`. Their
 * values are kept joined by spaces, which no absolute URI holds; a value
 * that holds one is refused, so values can never run together.
 */
export const REPEATABLE_PARAMS: ReadonlySet<string> = new Set(["resource"]);

function addRepeatable(into: Map<string, string>, key: string, value: string): void {
  if (value === "" || /\s/.test(value)) throw new OAuthError("invalid_target", "a resource must be an absolute URI (RFC 8707 §2)");
  const before = into.get(key);
  into.set(key, before === undefined ? value : `${before} ${value}`);
}

/** RFC 6749 §3.1: parameters must not be repeated, but for REPEATABLE_PARAMS. */
function formParams(source: URLSearchParams, into: Map<string, string>, where: string): void {
  for (const [key, value] of source) {
    if (REPEATABLE_PARAMS.has(key)) {
      addRepeatable(into, key, value);
      continue;
    }
    if (into.has(key)) throw new OAuthError("invalid_request", `parameter ${key.slice(0, 64)} is repeated (${where})`);
    into.set(key, value);
  }
}

function jsonParams(body: string, into: Map<string, string>): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new OAuthError("invalid_request", "body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new OAuthError("invalid_request", "JSON body must be an object");
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (value === null || value === undefined) continue;
    // A repeatable parameter may be a JSON list of strings.
    if (REPEATABLE_PARAMS.has(key) && (typeof value === "string" || Array.isArray(value))) {
      for (const item of ([] as unknown[]).concat(value)) {
        if (typeof item !== "string") throw new OAuthError("invalid_request", `parameter ${key} must be a string or a list of strings`);
        addRepeatable(into, key, item);
      }
      continue;
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new OAuthError("invalid_request", `parameter ${key.slice(0, 64)} must be a string`);
    }
    if (into.has(key)) throw new OAuthError("invalid_request", `parameter ${key.slice(0, 64)} is repeated (query and body)`);
    into.set(key, String(value));
  }
  const repeated = repeatedKey(body);
  if (repeated !== undefined) throw new OAuthError("invalid_request", `parameter ${repeated.slice(0, 64)} is repeated (JSON body)`);
}

/**
 * The first key a JSON object repeats, which JSON.parse would have settled
 * silently for the last. The text is known to be valid JSON by now; its
 * tokens come from jsonc-parser's scanner (VS Code's, which resolves escapes,
 * so `"sc\u006fpe"` is `scope`) rather than from a tokenizer of our own.
 * Only the top level is looked at: nested values are refused anyway.
 */
function repeatedKey(body: string): string | undefined {
  const seen = new Set<string>();
  let depth = 0;
  let repeated: string | undefined;
  visit(body, {
    onObjectBegin: () => void depth++,
    onObjectEnd: () => void depth--,
    onObjectProperty: (name) => {
      if (depth !== 1 || repeated !== undefined) return;
      if (seen.has(name)) repeated = name;
      else seen.add(name);
    },
  });
  return repeated;
}

/**
 * RFC 6749 §2.3.1: client credentials "MUST NOT be included in the request
 * URI", and passwords and refresh tokens are no better there: URLs end up in
 * proxies' and servers' access logs and in browser history. Their proto
 * field names and JSON names alike.
 */
const BODY_ONLY_PARAMS = ["client_secret", "clientSecret", "password", "refresh_token", "refreshToken"] as const;

/** Refuses a request that puts a credential in its query string. */
export function refuseCredentialsInQuery(url: URL): void {
  if (!url.search) return;
  const query = url.searchParams;
  for (const name of BODY_ONLY_PARAMS) {
    if (query.has(name)) throw new OAuthError("invalid_request", `${name} must be sent in the request body, never in the URL`);
  }
}

/**
 * The parameters of a REST call: query string plus a form or JSON body. Any
 * other non-empty body is refused, as is a parameter given twice.
 */
export function collectParams(url: URL, contentType: string | undefined, body: string): Map<string, string> {
  const params = new Map<string, string>();
  // `searchParams` makes an object on first use: most calls have no query.
  if (url.search) formParams(url.searchParams, params, "query");
  if (body.length === 0) return params;
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType === "application/x-www-form-urlencoded") {
    formParams(new URLSearchParams(body), params, "query and body");
  } else if (mediaType === "application/json" || mediaType.endsWith("+json")) {
    jsonParams(body, params);
  } else {
    throw new OAuthError("invalid_request", "unsupported content type: use application/x-www-form-urlencoded or application/json");
  }
  return params;
}
