import type { ServiceImpl } from "@connectrpc/connect";
import { ConsentAdminService } from "../../gen/identity/v1/consents_pb.js";
import type { ConsentView } from "../accounts/userConsents.js";
import type { Domain } from "../domain/index.js";
import { epochSecondsOf } from "./adminAuth.js";
import { everyMethod } from "./guards.js";

export const consentAdminGuards = everyMethod(ConsentAdminService, ["noStore", "admin"]);

export const consentOut = (c: ConsentView) => ({
  clientId: c.clientId,
  application: c.application,
  registered: c.registered,
  scopes: c.scopes,
  resources: c.resources,
  grantedTime: epochSecondsOf(c.grantedAt),
});

/** What users allowed applications (issue 43 §2), as administrators list and revoke it. */
export function consentAdminService(domain: Domain): ServiceImpl<typeof ConsentAdminService> {
  const consents = domain.userConsents;
  return {
    async listConsents(req) {
      return { consents: (await consents.list(req.user)).consents.map(consentOut) };
    },
    async revokeConsent(req) {
      const revoked = await consents.revokeFor(req.user, req.clientId);
      return { refreshTokensRevoked: revoked.refreshTokens };
    },
  };
}
