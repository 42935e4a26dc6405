import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { TokenRequestSchema, TokenService, type TokenRequest } from "../../gen/identity/v1/token_pb.js";
import type { TokenParams } from "../oauth/grants/types.js";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import type { TokenSet } from "../oauth/tokens.js";
import { everyMethod } from "./guards.js";
import { clientAddressOf, offerDPoPNonce, presentedCredentials, proofContextOf, REQUEST_CONTEXT } from "./headers.js";

const requestOrigin = (ctx: HandlerContext, issuer: string) => ({
  clientAddress: clientAddressOf(ctx),
  logLine: ctx.values.get(REQUEST_CONTEXT),
  dpop: proofContextOf(ctx, issuer),
});

// The contract carries every parameter the domain's grants read: this fails to compile when one is missing.
const _everyParameterInTheContract = (req: TokenRequest): TokenParams => req;
void _everyParameterInTheContract;

const tokenResponse = (tokens: TokenSet) => ({ ...tokens, expiresIn: BigInt(tokens.expiresIn) });

// RFC 6749 §5.1: token-bearing answers are never cached.
export const tokenGuards = everyMethod(TokenService, ["noStore"]);

export function tokenService(domain: Domain): ServiceImpl<typeof TokenService> {
  return {
    async token(req, ctx) {
      const basic = presentedCredentials(req, ctx);
      const tokens = await domain.tokenEndpoint.exchange(req, basic, requestOrigin(ctx, domain.issuer));
      offerDPoPNonce(ctx, domain.dpop);
      return tokenResponse(tokens);
    },
    // The refresh endpoint is the token endpoint pinned to one grant type.
    async refresh(req, ctx) {
      const basic = presentedCredentials(req, ctx);
      if (req.grantType && req.grantType !== "refresh_token") {
        throw new OAuthError("unsupported_grant_type", "this endpoint only takes grant_type=refresh_token");
      }
      const { refreshToken, scope, clientId, clientSecret, resource, clientAssertionType, clientAssertion } = req;
      const params = create(TokenRequestSchema, { grantType: "refresh_token", refreshToken, scope, clientId, clientSecret, resource, clientAssertionType, clientAssertion });
      const tokens = await domain.tokenEndpoint.exchange(params, basic, requestOrigin(ctx, domain.issuer));
      offerDPoPNonce(ctx, domain.dpop);
      return tokenResponse(tokens);
    },
    async deviceAuthorization(req, ctx) {
      const basic = presentedCredentials(req, ctx);
      const answer = await domain.devices.start(req, basic, clientAddressOf(ctx));
      return { ...answer, expiresIn: BigInt(answer.expiresIn), interval: BigInt(answer.interval) };
    },
  };
}
