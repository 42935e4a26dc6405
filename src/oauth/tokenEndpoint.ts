import { resolveClient, type BasicCredentials } from "./clientAuth.js";
import { OAuthError } from "./errors.js";
import { GRANTS } from "./grants/index.js";
import type { GrantDeps, RequestOrigin, TokenParams } from "./grants/types.js";
import type { TokenSet } from "./tokens.js";

/**
 * authorization_code is on for every application, whatever it lists (spec).
 * So is refresh_token: the spec's switch for it is refreshExpireInHours > 0,
 * which the grant itself checks.
 */
export function grantEnabled(grantTypes: readonly string[], grantType: string): boolean {
  return grantType === "authorization_code" || grantType === "refresh_token" || grantTypes.includes(grantType);
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
  const app =
    !client.clientSecret && grant.allowsPublicClient?.(params)
      ? await deps.clients.identify(client)
      : await deps.clients.authenticate(client);
  if (!grantEnabled(app.grantTypes, grant.grantType)) {
    throw new OAuthError("unauthorized_client", `the ${grant.grantType} grant is not enabled for this application`);
  }
  const tokens = await grant.handle(app, params, deps, origin);
  deps.metrics.tokensIssued(grant.grantType);
  return tokens;
}
