import type { ServiceImpl } from "@connectrpc/connect";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import type { Domain } from "../domain.js";
import { exchangeToken } from "../oauth/tokenEndpoint.js";
import { authorizationOf, noStore, noteClient } from "./headers.js";

export function tokenService(domain: Domain): ServiceImpl<typeof TokenService> {
  return {
    async token(req, ctx) {
      noStore(ctx);
      noteClient(req, ctx);
      const tokens = await exchangeToken(req, authorizationOf(ctx), domain);
      return { ...tokens, expiresIn: BigInt(tokens.expiresIn) };
    },
  };
}
