import type { ServiceImpl } from "@connectrpc/connect";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import type { Domain } from "../domain.js";
import { resolveClient } from "../oauth/clientAuth.js";
import { introspectToken } from "../oauth/introspection.js";
import { authorizationOf, noStore, noteClient } from "./headers.js";

export function introspectionService(domain: Domain): ServiceImpl<typeof IntrospectionService> {
  return {
    async introspect(req, ctx) {
      noStore(ctx);
      noteClient(req, ctx);
      await domain.clients.authenticate(resolveClient(req, authorizationOf(ctx)));
      const result = await introspectToken(domain.store, domain.clock, req.token);
      domain.metrics.introspected(result.active);
      const seconds = (v: number | undefined) => (v === undefined ? undefined : BigInt(v));
      return { ...result, exp: seconds(result.exp), iat: seconds(result.iat), nbf: seconds(result.nbf) };
    },
  };
}
