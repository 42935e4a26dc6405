import type { HandlerContext } from "@connectrpc/connect";

/** RFC 6749 §5.1: token-bearing responses must not be cached. */
export function noStore(ctx: HandlerContext): void {
  ctx.responseHeader.set("cache-control", "no-store");
  ctx.responseHeader.set("pragma", "no-cache");
}

export function authorizationOf(ctx: HandlerContext): string | null {
  return ctx.requestHeader.get("authorization");
}
