import type { HandlerContext } from "@connectrpc/connect";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import { constantTimeEqual } from "../oauth/secrets.js";
import { ADMIN_ACTOR, ADMIN_TOKEN_ACTOR } from "./adminActor.js";

/** Admin RPCs need `authorization: Bearer <IDENTITY_ADMIN_TOKEN>`; none configured means closed. */
export function requireAdmin(domain: Domain, ctx: HandlerContext): void {
  if (!domain.adminToken) throw new OAuthError("access_denied", "admin RPCs are closed: IDENTITY_ADMIN_TOKEN is not set");
  const match = /^Bearer\s+(\S+)$/i.exec(ctx.requestHeader.get("authorization") ?? "");
  if (!match?.[1] || !constantTimeEqual(match[1], domain.adminToken)) {
    throw new OAuthError("invalid_token", "a valid admin token is required");
  }
  ctx.values.set(ADMIN_ACTOR, ADMIN_TOKEN_ACTOR);
}

// The contract's times are epoch seconds; storage keeps milliseconds.
export const epochSecondsOf = (ms: number) => BigInt(Math.floor(ms / 1000));
