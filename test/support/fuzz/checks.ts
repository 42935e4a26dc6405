import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Code } from "@connectrpc/connect";
import { codeFromString, codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import type { HttpCase } from "./http.js";
import { header, type WireResponse } from "./wire.js";

/** A broken promise of the server, with what was sent and what came back. */
export class Violation extends Error {}

export function expect(condition: unknown, what: string, res?: WireResponse | string): asserts condition {
  if (!condition) {
    const shown = typeof res === "string" || res === undefined ? res : `${res.status} ${JSON.stringify(Object.fromEntries(res.headers))} ${res.body.subarray(0, 400).toString()}`;
    throw new Violation(shown ? `${what}\n  answer: ${shown}` : what);
  }
}

/** The error codes the REST API may answer with (server_error is a 500, never expected). */
export const OAUTH_ERROR_CODES = new Set([
  "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope",
  "invalid_token", "insufficient_scope", "unsupported_token_type", "access_denied", "unsupported_response_type",
  "login_required", "not_found", "already_exists", "temporarily_unavailable",
  // RFC 8707 §2: a resource parameter that is malformed, unknown or not granted.
  "invalid_target",
  // AccountService: a state that refuses the change (409); RFC 9470 §3: a sign-in too old for it (401).
  "failed_precondition", "insufficient_user_authentication",
]);

/** Codes that say the server failed, not the caller: never the answer to bad input. */
export const SERVER_FAULT_CODES = new Set([Code.Unknown, Code.Internal, Code.Unavailable, Code.DataLoss]);

/** The body as sent, undoing the content-encoding an answer declares (Connect compresses answers over 1 KiB a caller accepts compressed). */
function decoded(res: WireResponse): Buffer {
  const encoding = header(res, "content-encoding");
  try {
    if (encoding === "br") return brotliDecompressSync(res.body);
    if (encoding === "gzip") return gunzipSync(res.body);
  } catch {
    throw new Violation(`a body that is not ${encoding}\n  answer: ${res.status}`);
  }
  return res.body;
}

function json(res: WireResponse): any {
  try {
    return JSON.parse(decoded(res).toString("utf8"));
  } catch {
    throw new Violation(`body is not JSON\n  answer: ${res.status} ${res.body.subarray(0, 300).toString()}`);
  }
}

/** RFC 6749 §5.2 / RFC 6750 §3: JSON with exactly error and error_description, not cacheable. */
export function expectOAuthError(res: WireResponse): void {
  expect(/^application\/json/.test(header(res, "content-type") ?? ""), "an error that is not JSON", res);
  const body = json(res);
  expect(body && typeof body === "object" && !Array.isArray(body), "error body is not an object", res);
  expect(Object.keys(body).sort().join() === "error,error_description", "error body must hold exactly error and error_description", res);
  expect(OAUTH_ERROR_CODES.has(body.error), `unknown error code ${body.error}`, res);
  expect(typeof body.error_description === "string", "error_description is not a string", res);
  expect(header(res, "cache-control") === "no-store", "an error without cache-control: no-store", res);
}

/** What every answer must be: some answer, and not a server fault. */
function answered(res: WireResponse | "closed", mayClose: boolean): res is WireResponse {
  if (res === "closed") {
    expect(mayClose, "the connection closed without an answer");
    return false;
  }
  expect(res.status < 500, `a ${res.status}`, res);
  return true;
}

/** Errors the HTTP layer answers before any route is known: malformed, too large, too slow. */
const WIRE_ERRORS = new Set([400, 408, 413, 414, 417, 431]);

/** A REST API path: JSON on success, an RFC 6749 error otherwise. */
export function checkApiAnswer(method: string, res: WireResponse | "closed", mayClose: boolean): void {
  if (!answered(res, mayClose) || method === "HEAD") return;
  if (res.status >= 400) return expectOAuthError(res);
  if (res.status === 302) {
    expect(header(res, "location"), "a redirect without Location", res);
    return;
  }
  expect(res.status === 200, `unexpected status ${res.status}`, res);
  expect(/^application\/json/.test(header(res, "content-type") ?? ""), "a success that is not JSON", res);
  json(res);
}

/** Where the browser may be sent: only to a redirect URI registered for the client (no open redirect). */
export type RedirectCheck = (location: URL) => boolean;

/** A browser path: an HTML page with the security headers, a redirect to a registered client, or a wire-level JSON error. */
export function checkPageAnswer(method: string, res: WireResponse | "closed", mayClose: boolean, registered: RedirectCheck): void {
  if (res !== "closed" && res.status === 501 && /not available yet/.test(res.body.toString())) {
    // A configured provider's button, until the federation flow is live (issue 5): an honest "not implemented".
    return expectPageHeaders(res);
  }
  if (!answered(res, mayClose)) return;
  const type = header(res, "content-type") ?? "";
  if (res.status === 302 || res.status === 303) {
    const location = header(res, "location");
    expect(location, "a redirect without Location", res);
    let target: URL;
    try {
      target = new URL(location);
    } catch {
      throw new Violation(`a redirect to a relative or broken Location ${location}`);
    }
    expect(registered(target), `a redirect to an unregistered place: ${location}`, res);
    return;
  }
  if (method === "HEAD") return; // no body to judge
  if (/^application\/json/.test(type)) {
    // Only what the HTTP layer refuses before routing, and sign-out (an API), answer JSON here.
    if (res.status >= 400) expectOAuthError(res);
    return;
  }
  if (res.status === 200 && /^text\/css/.test(type)) return;
  if (res.status === 200 && /^text\/javascript/.test(type)) return;
  expect(/^text\/html; charset=utf-8$/.test(type), `a page that is not HTML (${type})`, res);
  // A form_post response page (the one page with a script, our own file) posts only to a registered place.
  const formPost = /<form id="form-post" method="post" action="([^"]*)"/.exec(res.body.toString());
  if (formPost) {
    const action = formPost[1]!.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
    expect(registered(new URL(action)), `a form_post to an unregistered place: ${action}`, res);
  }
  expectPageHeaders(res, formPost !== null);
}

/** The headers every HTML page carries: no script (but the form_post page's own), no framing, no Referer, no caching. */
export function expectPageHeaders(res: WireResponse, ownScript = false): void {
  const csp = header(res, "content-security-policy") ?? "";
  expect(/(^|;)\s*default-src 'none'/.test(csp), "CSP without default-src 'none'", res);
  // The form_post page alone runs a script: our own file, never inline.
  const scriptless = ownScript ? csp.replace(/(^|;)\s*script-src 'self';/, "$1") : csp;
  expect(!/script-src|unsafe-inline|unsafe-eval/.test(scriptless), "CSP allows script", res);
  expect(/frame-ancestors 'none'/.test(csp), "CSP allows framing", res);
  expect(header(res, "x-frame-options") === "DENY", "no X-Frame-Options: DENY", res);
  expect(header(res, "referrer-policy") === "no-referrer", "no Referrer-Policy: no-referrer", res);
  expect(header(res, "x-content-type-options") === "nosniff", "no X-Content-Type-Options: nosniff", res);
  expect(header(res, "cache-control") === "no-store", "a page without cache-control: no-store", res);
}

/**
 * The Connect protocol's unary answer: the message, or an error whose code
 * matches the HTTP status; 405/415 are the protocol's own refusals.
 */
export function checkConnectAnswer(c: HttpCase, res: WireResponse | "closed"): void {
  const timeoutHeader = c.extra.some(([name]) => name === "connect-timeout-ms");
  if (res !== "closed" && c.method === "HEAD") return void answered(res, false); // no body to judge
  if (res !== "closed" && res.status === 504 && timeoutHeader) {
    // The caller's own connect-timeout-ms ran out: its deadline, not our fault.
    expect(json(res).code === "deadline_exceeded", "504 without deadline_exceeded", res);
    return;
  }
  if (res !== "closed" && res.status === 501) {
    // The Connect protocol's required answer to a compression the server does not have.
    const body = json(res);
    expect(body.code === "unimplemented" && /^unknown compression/.test(body.message), "a 501 that is not about compression", res);
    return;
  }
  if (!answered(res, false)) return;
  const type = header(res, "content-type") ?? "";
  // The content type picks the protocol: a gRPC or gRPC-Web request to the same path gets that protocol's answer.
  if (type.startsWith("application/grpc")) return checkGrpcWebAnswer(res, false, c.http10);
  if (res.status === 200) {
    expect(/^application\/(json|proto)/.test(type), `a success of type ${type}`, res);
    return;
  }
  if (/^application\/json/.test(type)) {
    const body = json(res);
    if (typeof body?.error === "string") {
      // Refused before Connect saw it (by the HTTP layer, or no such route).
      expect(WIRE_ERRORS.has(res.status) || res.status === 404, `an OAuth error from the Connect door with ${res.status}`, res);
      return expectOAuthError(res);
    }
    const code = typeof body?.code === "string" ? codeFromString(body.code) : undefined;
    expect(code !== undefined, `not a Connect error: ${JSON.stringify(body).slice(0, 200)}`, res);
    expect(!SERVER_FAULT_CODES.has(code), `a server fault code ${body.code}`, res);
    expect(codeToHttpStatus(code) === res.status, `code ${body.code} with HTTP ${res.status}`, res);
    expect(body.message === undefined || typeof body.message === "string", "a message that is not a string", res);
    return;
  }
  expect(res.status === 405 || res.status === 415 || WIRE_ERRORS.has(res.status), `unexpected Connect status ${res.status}`, res);
}

/** gRPC-Web (or gRPC over HTTP/1.1): a status in the headers, the trailers or the trailer frame, never a server fault. */
export function checkGrpcWebAnswer(res: WireResponse | "closed", mayClose: boolean, http10 = false): void {
  if (!answered(res, mayClose)) return;
  if (res.status !== 200) {
    if (/^application\/json/.test(header(res, "content-type") ?? "")) {
      expect(WIRE_ERRORS.has(res.status) || res.status === 404, `an OAuth error from the gRPC door with ${res.status}`, res);
      return expectOAuthError(res);
    }
    expect(res.status === 405 || res.status === 415 || WIRE_ERRORS.has(res.status), `unexpected gRPC-Web status ${res.status}`, res);
    return;
  }
  // grpc-status in the headers (trailers-only) or the HTTP trailers (gRPC proper, which the content type may pick).
  let status = header(res, "grpc-status");
  if (!(header(res, "content-type") ?? "").startsWith("application/grpc-web")) {
    // gRPC proper puts its status in trailers, which an HTTP/1.0 answer cannot carry.
    if (http10 && status === undefined) return;
    return expectGrpcStatus(status, res);
  }
  for (let at = 0; at + 5 <= res.body.length; ) {
    const flags = res.body[at]!;
    const length = res.body.readUInt32BE(at + 1);
    expect(at + 5 + length <= res.body.length, "a truncated gRPC-Web frame", res);
    if (flags & 0x80) status = /(?:^|\r\n)grpc-status:\s*(\d+)/i.exec(res.body.subarray(at + 5, at + 5 + length).toString())?.[1] ?? status;
    at += 5 + length;
  }
  expectGrpcStatus(status, res);
}

export function expectGrpcStatus(status: string | number | undefined, res?: WireResponse | string): void {
  const code = Number(status);
  expect(status !== undefined && Number.isInteger(code) && code >= 0 && code <= 16, `no valid grpc-status (${status})`, res);
  expect(!SERVER_FAULT_CODES.has(code), `a server fault grpc-status ${code}`, res);
}
