import type { AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { requireUserToken } from "./accessTokens.js";
import type { DPoPProofs, PresentedToken } from "./dpop.js";
import { introspectToken, type Introspection } from "./introspection.js";
import type { Metrics } from "./metrics.js";
import { revokeToken } from "./revocation.js";
import { userInfo, type UserInfo } from "./userinfo.js";
import type { AccessTokenRecord } from "../store/tokens.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** What the doors ask of a presented token: introspection, userinfo, the user it acts for, revocation. */
export class TokenInspector {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly issuer: string,
    private readonly metrics: Metrics,
    private readonly audit: AuditTrail,
    /** DPoP proofs (RFC 9449), which a bound token's presentation needs. */
    readonly dpop: DPoPProofs,
  ) {}

  /** RFC 7662 §2.2, for an authenticated client. */
  async introspect(token: string): Promise<Introspection> {
    const result = await introspectToken(this.store, this.clock, token, this.issuer);
    this.metrics.introspected(result.active);
    return result;
  }

  /** OIDC Core §5.3: the claims the token's scopes release. */
  userInfo(presented: PresentedToken | undefined): Promise<UserInfo> {
    return userInfo(this.store, this.clock, this.issuer, presented, this.dpop);
  }

  /** The live token of an enabled user, presented as its binding asks, and that user; `invalid_token` otherwise (RFC 6750 §3.1). */
  userToken(presented: PresentedToken | undefined): Promise<{ record: AccessTokenRecord; user: UserRecord }> {
    return requireUserToken(this.store, this.clock, presented, this.dpop);
  }

  /** RFC 7009: `app` revokes one of its own tokens; anything else is left alone, silently. */
  revoke(app: Pick<ApplicationRecord, "id" | "clientId">, token: string, clientAddress?: string): Promise<void> {
    return revokeToken(this.store, this.clock, app.clientId, token, { trail: this.audit, app, clientAddress });
  }
}
