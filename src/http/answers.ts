import type { ServerResponse } from "node:http";
import { asOAuthError, worthLogging, httpStatusOf, RETRY_AFTER_SECONDS, type OAuthError } from "../oauth/errors.js";
import { annotateRequest, requestContextOf, type LogUnexpected } from "./requestContext.js";

/** Write a JSON body with the headers every API response carries. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(payload),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(payload);
}

/** Quote a value for a WWW-Authenticate parameter (RFC 9110 quoted-string). */
const quoted = (s: string) => `"${s.replace(/[\\"]/g, "\\$&").replace(/[^\x20-\x7e]/g, "")}"`;

/** RFC 9470 §3: a step-up refusal says how recent a sign-in the resource takes, as `max_age`. */
const stepUp = (err: OAuthError) => (err.answer?.maxAge === undefined ? "" : `, max_age=${err.answer.maxAge}`);

/** A DPoP challenge (RFC 9449 §7.1): the error, and the proof algorithms taken. */
export function dpopChallenge(err: OAuthError, metadata = ""): string {
  const algs = err.answer?.algs?.length ? `, algs=${quoted(err.answer.algs.join(" "))}` : "";
  return `DPoP realm="identity", error=${quoted(err.code)}, error_description=${quoted(err.description)}${algs}${stepUp(err)}${metadata}`;
}

/** A Bearer challenge naming the error (RFC 6750 §3), with a step-up's `max_age` (RFC 9470 §3). */
export function bearerChallenge(err: OAuthError, metadata = ""): string {
  return `Bearer realm="identity", error=${quoted(err.code)}, error_description=${quoted(err.description)}${stepUp(err)}${metadata}`;
}

/**
 * The REST front door's one mapping of errors: RFC 6749 §5.2 / RFC 6750 §3
 * JSON with the matching status and WWW-Authenticate challenge. Anything that
 * is not an OAuthError is logged; an unreachable database becomes 503 with
 * Retry-After, the rest a bare server_error.
 */
export function sendError(res: ServerResponse, failure: unknown, log: LogUnexpected, resourceMetadata?: string): void {
  const err = asOAuthError(failure);
  const context = requestContextOf(res.req);
  if (worthLogging(failure)) log(failure, context);
  if (!err) {
    sendJson(res, 500, { error: "server_error", error_description: "internal error" });
    return;
  }
  annotateRequest(context, { oauthError: err.code });
  const headers: Record<string, string> = {};
  if (err.code === "temporarily_unavailable") headers["retry-after"] = String(RETRY_AFTER_SECONDS);
  if (err.code === "invalid_client") headers["www-authenticate"] = 'Basic realm="identity"';
  // RFC 9728 §5.1: a Bearer challenge names where the protected resource's metadata is.
  const metadata = resourceMetadata ? `, resource_metadata=${quoted(resourceMetadata)}` : "";
  // RFC 6750 §3.1: a request without any credentials gets the bare challenge.
  if (err.code === "login_required") headers["www-authenticate"] = `Bearer realm="identity"${metadata}`;
  // RFC 9470 §3: too old a sign-in is answered like a bad token, with the max_age to sign in again under.
  if (err.code === "invalid_token" || err.code === "insufficient_user_authentication") headers["www-authenticate"] = bearerChallenge(err, metadata);
  // RFC 9449 §7.1: a protected resource's refusal of a DPoP presentation challenges with DPoP; §8: a nonce to retry with.
  if (err.answer?.challenge === "DPoP") headers["www-authenticate"] = dpopChallenge(err, metadata);
  if (err.answer?.dpopNonce) headers["dpop-nonce"] = err.answer.dpopNonce;
  sendJson(res, err.status ?? httpStatusOf(err.code), { error: err.code, error_description: err.description }, headers);
}
