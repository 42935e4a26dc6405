import { createContextKey, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { ClientAddressOf, RequestSource } from "../http/clientAddress.js";
import { readBasicAuth, type BasicCredentials } from "../oauth/clientAuth.js";
import { OAuthError } from "../oauth/errors.js";
import { cookieValue, SESSION_COOKIE } from "../oauth/sessions.js";
import { annotateRequest, type RequestContext } from "../http/requestContext.js";

/** RFC 6749 §5.1: token-bearing responses must not be cached. */
export function noStore(ctx: HandlerContext): void {
  ctx.responseHeader.set("cache-control", "no-store");
  ctx.responseHeader.set("pragma", "no-cache");
}

function authorizationOf(ctx: HandlerContext): string | null {
  return ctx.requestHeader.get("authorization");
}

/**
 * The token of an `authorization: Bearer` header (RFC 6750 §2.1), which gRPC
 * callers send as metadata. Other schemes do not count.
 */
export function bearerTokenOf(ctx: HandlerContext): string | undefined {
  const match = /^Bearer +(\S*)\s*$/i.exec(authorizationOf(ctx) ?? "");
  return match ? match[1] : undefined;
}

/** The request's log line, which each front door puts in the call's context values. */
export const REQUEST_CONTEXT = createContextKey<RequestContext | undefined>(undefined, { description: "request context" });

/** The caller's IP address, which each front door puts in the call's context values. */
export const CLIENT_ADDRESS = createContextKey<string | undefined>(undefined, { description: "client address" });

/** The context values every front door gives a call: its log line and the caller's address. */
export function callContextValues(clientAddress: ClientAddressOf): (source: RequestSource, context: RequestContext | undefined) => ContextValues {
  return (source, context) => createContextValues().set(CLIENT_ADDRESS, clientAddress(source)).set(REQUEST_CONTEXT, context);
}

export function clientAddressOf(ctx: HandlerContext): string | undefined {
  return ctx.values.get(CLIENT_ADDRESS);
}

export function sessionCookieOf(ctx: HandlerContext): string | undefined {
  return cookieValue(ctx.requestHeader.get("cookie"), SESSION_COOKIE);
}

/**
 * The call's Basic client credentials, decoded once for its log line and its
 * authentication. The client the call names (body field, else Basic
 * credentials) goes on its log line: the presented id, before
 * authentication; malformed credentials are left for the domain to refuse.
 */
export function presentedCredentials(req: { clientId: string }, ctx: HandlerContext): BasicCredentials {
  const basic = readBasicAuth(authorizationOf(ctx));
  noteClient(req.clientId || (basic instanceof OAuthError ? undefined : basic?.clientId), ctx);
  return basic;
}

/** Put a client id on the call's log line. */
export function noteClient(clientId: string | undefined, ctx: HandlerContext): void {
  if (clientId) annotateRequest(ctx.values.get(REQUEST_CONTEXT), { clientId: clientId.slice(0, 200) });
}
