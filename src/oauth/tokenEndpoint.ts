import { resolveClient, type BasicCredentials } from "./clientAuth.js";
import { OAuthError } from "./errors.js";
import { dpopAlgsFor, dpopRequiredBy } from "./fapi2.js";
import { GRANTS, grantEnabled } from "./grants/index.js";
import type { GrantDeps, GrantHandler, GrantParam, RequestOrigin, TokenParams } from "./grants/types.js";
import type { TokenSet } from "./tokens.js";
import { clientActor } from "../shared/audit.js";
import type { ApplicationRecord } from "../shared/model.js";

/** The request's parameters that the grant declared, and no others. */
function parametersFor<P extends GrantParam>(grant: GrantHandler<P>, params: TokenParams): Pick<TokenParams, P> {
  const declared = {} as Pick<TokenParams, P>;
  for (const name of grant.parameters) declared[name] = params[name];
  return declared;
}

/** An application that sent no secret, if this grant takes that from it (a PKCE code exchange, a public client's refresh). */
function withoutSecret<P extends GrantParam>(app: ApplicationRecord, grant: GrantHandler<P>, params: Pick<TokenParams, P>): ApplicationRecord {
  if (grant.allowsPublicClient?.(params, app)) return app;
  throw new OAuthError("invalid_client", "client authentication failed");
}

/**
 * The thumbprint of the key of the request's DPoP proof (RFC 9449 §5), once
 * checked; undefined when it sent none and the application does not ask for
 * one (dpopBoundAccessTokens, or the fapi2 profile: oauth/fapi2.ts).
 */
async function proofOfPossession(app: ApplicationRecord, origin: RequestOrigin, deps: Pick<GrantDeps, "dpop">): Promise<string | undefined> {
  if (origin.dpop?.proof !== undefined) return deps.dpop.verify(origin.dpop, "token", undefined, dpopAlgsFor(app));
  // RFC 9449 §7.1 names no error for a missing proof; invalid_dpop_proof says which part of the request is lacking.
  const required = dpopRequiredBy(app);
  if (required) throw new OAuthError("invalid_dpop_proof", required);
  return undefined;
}

/** The token endpoint (RFC 6749 §3.2): authenticate, check the grant, dispatch. */
export async function exchangeToken(
  params: TokenParams,
  basic: BasicCredentials,
  deps: GrantDeps,
  origin: RequestOrigin = {},
): Promise<TokenSet> {
  if (!params.grantType) throw new OAuthError("invalid_request", "missing parameter: grant_type");
  const grant = GRANTS.get(params.grantType);
  if (!grant) throw new OAuthError("unsupported_grant_type", `unsupported grant_type: ${params.grantType.slice(0, 64)}`);

  const client = resolveClient(params, basic);
  const grantParams = parametersFor(grant, params);
  const app = grant.identify
    ? await grant.identify(client, grantParams, deps)
    : client.clientSecret || client.clientAssertion
      ? await deps.clients.authenticate(client, origin.clientAddress, "token")
      : withoutSecret(await deps.clients.identify(client), grant, grantParams);
  if (!grantEnabled(app.grantTypes, grant.grantType)) {
    throw new OAuthError("unauthorized_client", `the ${grant.grantType} grant is not enabled for this application`);
  }
  const dpopJkt = await proofOfPossession(app, origin, deps);
  const bound = dpopJkt === undefined ? { deps, origin } : { deps: { ...deps, minter: deps.minter.boundTo(dpopJkt) }, origin: { ...origin, dpopJkt } };
  const { user, ...tokens } = await grant.handle(app, grantParams, bound.deps, bound.origin);
  deps.metrics.tokensIssued(grant.grantType);
  deps.audit.record({
    event: "token_issued",
    outcome: "success",
    actor: clientActor(app),
    clientId: app.clientId,
    clientAddress: origin.clientAddress,
    userId: user?.id,
    userName: user?.name,
    details: { grantType: grant.grantType, scope: tokens.scope },
  }, origin.logLine);
  return tokens;
}

/** The token endpoint as the doors call it. */
export class TokenEndpoint {
  constructor(private readonly deps: GrantDeps) {}

  exchange(params: TokenParams, basic: BasicCredentials, origin: RequestOrigin = {}): Promise<TokenSet> {
    return exchangeToken(params, basic, this.deps, origin);
  }
}
