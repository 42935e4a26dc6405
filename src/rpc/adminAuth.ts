import type { HandlerContext } from "@connectrpc/connect";
import type { Domain } from "../domain/index.js";
import { annotateRequest } from "../http/requestContext.js";
import { OAuthError } from "../oauth/errors.js";
import { ADMIN_SCOPE } from "../oauth/scopes.js";
import { constantTimeEqual } from "../oauth/secrets.js";
import { ADMIN_ACTOR, ADMIN_TOKEN_ACTOR, type AdminActor } from "./adminActor.js";
import type { PresentedToken } from "../oauth/dpop.js";
import { offerDPoPNonce, presentedTokenOf, REQUEST_CONTEXT } from "./headers.js";

/**
 * Admin RPCs take `authorization: Bearer <token>`, where the token is
 * IDENTITY_ADMIN_TOKEN, or an access token carrying the admin scope of a user
 * who is an admin and not disabled (`authorization: DPoP` with a proof when
 * the token is DPoP-bound, RFC 9449 §7.1). The user is read at every call, so
 * demoting, disabling or deleting them ends their access at the next one.
 * The caller let in is kept for adminActorOf (adminActor.ts).
 */
export async function requireAdmin(domain: Domain, ctx: HandlerContext): Promise<void> {
  const actor = await adminActorFor(domain, presentedTokenOf(ctx, domain.issuer));
  offerDPoPNonce(ctx, domain.dpop);
  ctx.values.set(ADMIN_ACTOR, actor);
  // The request's log line names the actor, so every admin change is logged with who made it.
  annotateRequest(ctx.values.get(REQUEST_CONTEXT), { adminActor: actor });
}

async function adminActorFor(domain: Domain, presented: PresentedToken | undefined): Promise<AdminActor> {
  if (!presented?.token) {
    throw new OAuthError("invalid_token", `the admin token, or an access token with scope ${ADMIN_SCOPE}, is required`);
  }
  if (presented.scheme === "Bearer" && domain.adminToken && constantTimeEqual(presented.token, domain.adminToken)) return ADMIN_TOKEN_ACTOR;
  let found: Awaited<ReturnType<Domain["tokens"]["userToken"]>>;
  try {
    found = await domain.tokens.userToken(presented);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    // A proof's own refusal (a replay, a missing nonce) is answered as it is, with its challenge and nonce.
    if (err.code !== "invalid_token" || err.answer) throw err;
    // UNAUTHENTICATED either way: a client whose token ended signs in again.
    const adminTokenState = domain.adminToken ? "not the admin token" : "no admin token is configured";
    throw new OAuthError("invalid_token", `${adminTokenState}, and ${err.description}`);
  }
  const { record, user } = found;
  // Who the user is comes first: a non-admin's token never has the scope, and "not an administrator" says why.
  if (!user.isAdmin) throw new OAuthError("access_denied", `not an administrator: ${user.name}`);
  if (!record.scope.split(" ").includes(ADMIN_SCOPE)) {
    throw new OAuthError("insufficient_scope", `the access token lacks the ${ADMIN_SCOPE} scope`);
  }
  return { kind: "user", id: user.id, name: user.name };
}

// The contract's times are epoch seconds; storage keeps milliseconds.
export const epochSecondsOf = (ms: number) => BigInt(Math.floor(ms / 1000));
