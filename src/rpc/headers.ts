import { createContextKey, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { ClientAddressOf, RequestSource } from "../http/clientAddress.js";
import { readBasicAuth, type BasicCredentials } from "../oauth/clientAuth.js";
import type { DPoPProofs, PresentedToken, ProofContext } from "../oauth/dpop.js";
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
 * What a DPoP proof sent with this call must name (RFC 9449 §4.2): over REST
 * the request's method and the issuer's URL with the request's path; for an
 * RPC, on every protocol, POST and `<issuer>/identity.v1.<Service>/<Method>`.
 * The issuer, not the Host header, so that it holds behind a load balancer.
 */
export function proofTarget(ctx: HandlerContext, issuer: string): { htm: string; htu: string } {
  if (ctx.protocolName === "rest") return { htm: ctx.requestMethod, htu: `${issuer}${new URL(ctx.url).pathname}` };
  return { htm: "POST", htu: `${issuer}/${ctx.service.typeName}/${ctx.method.name}` };
}

/** The call's DPoP header and what its proof must name; undefined when it sent none. */
export function proofContextOf(ctx: HandlerContext, issuer: string): ProofContext | undefined {
  const proof = ctx.requestHeader.get("dpop");
  return proof === null ? undefined : { proof, ...proofTarget(ctx, issuer) };
}

/**
 * The access token of an `authorization: Bearer` header (RFC 6750 §2.1) or
 * an `authorization: DPoP` header with the call's DPoP proof (RFC 9449 §7.1),
 * which gRPC callers send as metadata. Other schemes do not count.
 */
export function presentedTokenOf(ctx: HandlerContext, issuer: string): PresentedToken | undefined {
  const match = /^(Bearer|DPoP) +(\S*)\s*$/i.exec(authorizationOf(ctx) ?? "");
  if (!match) return undefined;
  const token = match[2];
  if (match[1]!.toLowerCase() === "bearer") return { token, scheme: "Bearer" };
  return { token, scheme: "DPoP", dpop: proofContextOf(ctx, issuer) ?? { proof: undefined, ...proofTarget(ctx, issuer) } };
}

/** RFC 9449 §8: an answer to a call that sent a DPoP proof carries a fresh nonce, where nonces are in use. */
export function offerDPoPNonce(ctx: HandlerContext, dpop: Pick<DPoPProofs, "nonce">): void {
  if (!ctx.requestHeader.has("dpop")) return;
  const nonce = dpop.nonce();
  if (nonce) ctx.responseHeader.set("dpop-nonce", nonce);
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
