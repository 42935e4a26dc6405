import type { IncomingMessage } from "node:http";
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

/** RFC 6749 §3.1: parameters must not be repeated. */
function formParams(source: URLSearchParams, into: Map<string, string>, where: string): void {
  for (const [key, value] of source) {
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
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new OAuthError("invalid_request", `parameter ${key.slice(0, 64)} must be a string`);
    }
    if (into.has(key)) throw new OAuthError("invalid_request", `parameter ${key.slice(0, 64)} is repeated (query and body)`);
    into.set(key, String(value));
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
