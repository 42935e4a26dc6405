import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { AccountService } from "../../gen/identity/v1/account_pb.js";
import type { OwnSession } from "../accounts/ownAccount.js";
import type { Domain } from "../domain/index.js";
import { echo, OAuthError } from "../oauth/errors.js";
import type { FederatedIdentityRecord, UserRecord } from "../shared/model.js";
import { factorOut } from "./admin.js";
import { epochSecondsOf } from "./adminAuth.js";
import { consentOut } from "./consents.js";
import { everyMethod } from "./guards.js";
import { clientAddressOf, offerDPoPNonce, presentedTokenOf } from "./headers.js";

// Answers about a user's own account are never cached.
export const accountGuards = everyMethod(AccountService, ["noStore"]);

/** A form's sentence as an error description: no capital, no full stop. */
const description = (sentence: string) => `${sentence[0]!.toLowerCase()}${sentence.slice(1)}`.replace(/\.$/, "");

/** Over RPC no session is the caller's: an access token does not name the one it was issued in, and the cookie is not read. */
const sessionOut = (s: OwnSession) => ({
  id: s.id,
  createdTime: epochSecondsOf(s.createdAt),
  authTime: BigInt(s.authTime),
  expireTime: epochSecondsOf(s.expiresAt),
  current: false,
});

const linkOut = (l: FederatedIdentityRecord) => ({
  provider: l.provider,
  externalIdType: l.externalIdType,
  externalId: l.externalId,
  username: l.username,
  createdTime: epochSecondsOf(l.createdAt),
});

/**
 * A user's own account over RPC and REST (proto/identity/v1/account.proto),
 * the account page's actions for clients: the caller is the Bearer token's
 * user, never a session cookie's. Each action is the page's own domain call,
 * so it is audited as the page's is.
 */
export function accountService(domain: Domain): ServiceImpl<typeof AccountService> {
  /** The token's user (domain.account.tokenCaller: `openid`, and a recent sign-in for `recentSignIn`). */
  const caller = async (ctx: HandlerContext, recentSignIn = false): Promise<UserRecord> => {
    const user = await domain.account.tokenCaller(presentedTokenOf(ctx, domain.issuer), { recentSignIn });
    // RFC 9449 §8: a call with a proof gets the next nonce, where nonces are in use.
    offerDPoPNonce(ctx, domain.dpop);
    return user;
  };
  return {
    async changePassword(req, ctx) {
      // A Bearer token, or a DPoP-bound one with its proof (RFC 9449 §7.1); RFC 6750 §3.1: no token, no account.
      const accessToken = presentedTokenOf(ctx, domain.issuer);
      if (accessToken === undefined) throw new OAuthError("invalid_token", "send the user's access token as a Bearer header", 401);
      const { user } = await domain.account.signedIn({ accessToken });
      const result = await domain.selfService.passwordChange.change(user, req.currentPassword, req.newPassword, req.newPassword, { clientAddress: clientAddressOf(ctx) });
      if (result.kind === "changed") return {};
      const { current, password } = result.errors;
      if (current) throw new OAuthError("invalid_grant", description(current));
      throw new OAuthError("invalid_request", description(password ?? "the new password is not accepted"));
    },
    async listOwnSessions(_req, ctx) {
      return { sessions: (await domain.ownAccount.sessions(await caller(ctx))).map(sessionOut) };
    },
    async endOwnSession(req, ctx) {
      if (!(await domain.ownAccount.endSession(await caller(ctx), req.id, clientAddressOf(ctx)))) throw new OAuthError("not_found", "you have no such session");
      return {};
    },
    async listFactors(_req, ctx) {
      const user = await caller(ctx);
      const [factors, recoveryCodesLeft] = await Promise.all([domain.secondFactors.list(user.id), domain.secondFactors.recoveryCodesLeft(user.id)]);
      return { factors: factors.map(factorOut), recoveryCodesLeft };
    },
    async removeFactor(req, ctx) {
      const removal = await domain.ownAccount.removeFactor(await caller(ctx, true), req.factorId, req.confirm);
      if (removal.kind === "not_found") throw new OAuthError("not_found", "you have no such factor");
      if (removal.kind === "confirm") {
        const names = removal.applications.map(echo).join(", ");
        throw new OAuthError("failed_precondition", `this is your last second factor, and these applications require one: ${names}; send confirm to remove it`);
      }
      return {};
    },
    async renamePasskey(req, ctx) {
      const user = await caller(ctx);
      if (!(await domain.passkeys.list(user.id)).some((p) => p.id === req.factorId)) throw new OAuthError("not_found", "you have no such passkey");
      if (!(await domain.passkeys.rename(user, req.factorId, req.name))) throw new OAuthError("invalid_request", "give the passkey a name");
      return {};
    },
    async listLinkedProviders(_req, ctx) {
      return { providers: (await domain.ownAccount.links(await caller(ctx))).map(linkOut) };
    },
    async unlinkProvider(req, ctx) {
      const outcome = await domain.ownAccount.unlink(await caller(ctx, true), req.provider, req.externalIdType, req.externalId);
      if (outcome === "not_found") throw new OAuthError("not_found", "that provider is not linked to your account");
      if (outcome === "last_sign_in") throw new OAuthError("failed_precondition", "this provider is the only way you sign in: it stays linked");
      return {};
    },
    async listOwnConsents(_req, ctx) {
      return { consents: (await domain.userConsents.of(await caller(ctx))).map(consentOut) };
    },
    async revokeOwnConsent(req, ctx) {
      const revoked = await domain.userConsents.revokeOwn(await caller(ctx), req.clientId);
      return { refreshTokensRevoked: revoked.refreshTokens };
    },
  };
}
