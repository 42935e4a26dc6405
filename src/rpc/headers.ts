import type { HandlerContext } from "@connectrpc/connect";
import { parseBasicAuth } from "../oauth/clientAuth.js";
import { annotateRequest } from "../requestContext.js";

/** RFC 6749 §5.1: token-bearing responses must not be cached. */
export function noStore(ctx: HandlerContext): void {
  ctx.responseHeader.set("cache-control", "no-store");
  ctx.responseHeader.set("pragma", "no-cache");
}

export function authorizationOf(ctx: HandlerContext): string | null {
  return ctx.requestHeader.get("authorization");
}

/**
 * Put the client a request names (body field or Basic credentials) on its
 * log line. It is the presented id, before authentication; malformed
 * credentials are left for the domain to refuse.
 */
export function noteClient(req: { clientId: string }, ctx: HandlerContext): void {
  let clientId = req.clientId;
  try {
    clientId ||= parseBasicAuth(authorizationOf(ctx))?.clientId ?? "";
  } catch {
    return;
  }
  if (clientId) annotateRequest({ clientId: clientId.slice(0, 200) });
}
