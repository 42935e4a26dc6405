import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { GetUserInfoResponseSchema, IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import type { Domain } from "../domain/index.js";
import { resolveClient } from "../oauth/clientAuth.js";
import { OAuthError } from "../oauth/errors.js";
import { CLEARED_SESSION_COOKIE } from "../oauth/sessions.js";
import { accountOf } from "./account.js";
import { everyMethod } from "./guards.js";
import type { PresentedToken } from "../oauth/dpop.js";
import { clientAddressOf, noteClient, offerDPoPNonce, presentedCredentials, presentedTokenOf, sessionCookieOf } from "./headers.js";

/** RFC 6750 §2: a token in the message and another in the header is one method too many. */
function oneAccessToken(fromMessage: string, ctx: HandlerContext, issuer: string): PresentedToken | undefined {
  const fromHeader = presentedTokenOf(ctx, issuer);
  if (fromMessage && fromHeader !== undefined) {
    throw new OAuthError("invalid_request", "send the access token either as accessToken or in the authorization header, not both");
  }
  return fromMessage ? { token: fromMessage, scheme: "Bearer" } : fromHeader;
}

// Answers about tokens, users and sessions are never cached.
export const introspectionGuards = everyMethod(IntrospectionService, ["noStore"]);

export function introspectionService(domain: Domain): ServiceImpl<typeof IntrospectionService> {
  return {
    async introspect(req, ctx) {
      const basic = presentedCredentials(req, ctx);
      await domain.clients.authenticate(resolveClient(req, basic), clientAddressOf(ctx), "introspection");
      const result = await domain.tokens.introspect(req.token);
      const seconds = (v: number | undefined) => (v === undefined ? undefined : BigInt(v));
      return { ...result, exp: seconds(result.exp), iat: seconds(result.iat), nbf: seconds(result.nbf), authTime: seconds(result.authTime) };
    },
    async revoke(req, ctx) {
      const basic = presentedCredentials(req, ctx);
      // RFC 7009 §2.1: a public client (the console) revokes its own tokens with its client_id alone.
      const app = await domain.clients.authenticateOrPublic(resolveClient(req, basic), clientAddressOf(ctx));
      await domain.tokens.revoke(app, req.token, clientAddressOf(ctx));
      return {};
    },
    async getUserInfo(req, ctx) {
      const claims = await domain.tokens.userInfo(oneAccessToken(req.accessToken, ctx, domain.issuer));
      offerDPoPNonce(ctx, domain.dpop);
      // No client authenticates here; the log line names the client the token was issued to.
      noteClient(claims.aud, ctx);
      // Claim names are the proto field names, so a claim the message lacks fails loudly in tests.
      return fromJson(GetUserInfoResponseSchema, claims as JsonObject);
    },
    async getAccount(_req, ctx) {
      const { user, fields } = await domain.account.signedIn({ accessToken: presentedTokenOf(ctx, domain.issuer), sessionCookie: sessionCookieOf(ctx) });
      offerDPoPNonce(ctx, domain.dpop);
      const links = fields.has("linkedIdentities") ? await domain.account.linkedIdentities(user.id) : [];
      return { status: "ok", msg: "", data: accountOf(user, links, fields) };
    },
    async endSession(req, ctx) {
      const redirectUri = await domain.signOut.end(sessionCookieOf(ctx), req);
      ctx.responseHeader.set("set-cookie", CLEARED_SESSION_COOKIE);
      return { redirectUri: redirectUri ?? "" };
    },
  };
}
