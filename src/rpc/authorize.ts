import { ScalarType } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  PushAuthorizationRequestRequestSchema,
  PushedAuthorizationService,
  type PushAuthorizationRequestRequest,
} from "../../gen/identity/v1/authorize_pb.js";
import type { Domain } from "../domain/index.js";
import { everyMethod } from "./guards.js";
import { clientAddressOf, offerDPoPNonce, presentedCredentials, proofContextOf } from "./headers.js";

/** The client's authentication, which is no authorize parameter. */
const CREDENTIALS = new Set(["client_secret", "client_assertion_type", "client_assertion"]);

/**
 * The authorize parameters of a push, by their proto (OAuth) names: every
 * non-empty string field but the credentials, a repeated one joined by
 * spaces as a repeated query parameter is. A field added to the contract is
 * a parameter at once (the DPoP binding's dpop_jkt, say).
 */
export function authorizeParameters(req: PushAuthorizationRequestRequest): Map<string, string> {
  const params = new Map<string, string>();
  const fields = req as unknown as Record<string, unknown>;
  for (const field of PushAuthorizationRequestRequestSchema.fields) {
    if (CREDENTIALS.has(field.name) || field.scalar !== ScalarType.STRING) continue;
    const value = fields[field.localName];
    const text = Array.isArray(value) ? value.join(" ") : value;
    if (typeof text === "string" && text !== "") params.set(field.name, text);
  }
  return params;
}

// RFC 9126 §2.2: the answer is never cached.
export const pushedAuthorizationGuards = everyMethod(PushedAuthorizationService, ["noStore"]);

export function pushedAuthorizationService(domain: Domain): ServiceImpl<typeof PushedAuthorizationService> {
  return {
    async pushAuthorizationRequest(req, ctx) {
      const basic = presentedCredentials(req, ctx);
      const answer = await domain.pushedAuthorizations.push(authorizeParameters(req), req, basic, clientAddressOf(ctx), proofContextOf(ctx, domain.issuer));
      offerDPoPNonce(ctx, domain.dpop);
      return { requestUri: answer.requestUri, expiresIn: BigInt(answer.expiresIn) };
    },
  };
}
