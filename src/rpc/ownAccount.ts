import type { ServiceImpl } from "@connectrpc/connect";
import { AccountService } from "../../gen/identity/v1/account_pb.js";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import { everyMethod } from "./guards.js";
import { clientAddressOf, presentedTokenOf } from "./headers.js";

// Answers about a user's own account are never cached.
export const accountGuards = everyMethod(AccountService, ["noStore"]);

/** A form's sentence as an error description: no capital, no full stop. */
const description = (sentence: string) => `${sentence[0]!.toLowerCase()}${sentence.slice(1)}`.replace(/\.$/, "");

/**
 * A user's own account over RPC and REST (proto/identity/v1/account.proto),
 * the account page's actions for clients: the caller is the Bearer token's
 * user, never a session cookie's.
 */
export function accountService(domain: Domain): ServiceImpl<typeof AccountService> {
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
  };
}
