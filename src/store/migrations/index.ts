import type { Knex } from "knex";
import * as initial from "./001_initial.js";
import * as authorization from "./003_authorization.js";
import * as signingKeyUsage from "./005_signing_key_usage.js";
import * as cleanupIndexes from "./006_cleanup_indexes.js";
import * as federation from "./007_federation.js";
import * as signingKeyHold from "./008_signing_key_hold.js";
import * as tokensWithoutFamily from "./009_tokens_without_family.js";
import * as refreshTokensByUser from "./012_refresh_tokens_by_user.js";
import * as codeClaims from "./013_code_claims.js";
import * as tokenFormat from "./014_token_format.js";
import * as applicationAllowedOrigins from "./015_application_allowed_origins.js";
import * as providerOptions from "./016_provider_options.js";
import * as signingAlg from "./020_signing_alg.js";
import * as accessTokenStrategy from "./021_access_token_strategy.js";
import * as opaqueUserinfoClaims from "./022_opaque_userinfo_claims.js";
import * as auditEvents from "./023_audit_events.js";
import * as publicClient from "./024_public_client.js";
import * as refreshIdTokenClaims from "./025_refresh_id_token_claims.js";
import * as resources from "./030_resources.js";
import * as clientRegistration from "./031_client_registration.js";
import * as consents from "./032_consents.js";
import * as clientAssertions from "./040_client_assertions.js";
import * as deviceCodes from "./041_device_codes.js";
import * as tokenExchange from "./042_token_exchange.js";
import * as userFactors from "./050_user_factors.js";
import * as ownAccount from "./053_own_account.js";
import * as deviceCodeAmr from "./054_device_code_amr.js";
import * as webauthnChallengeBinding from "./051_webauthn_challenge_binding.js";
import * as selfService from "./060_self_service.js";
import * as pushedAuthorizationRequests from "./070_pushed_authorization_requests.js";
import * as dpopBinding from "./072_dpop_binding.js";
import * as dpopProofs from "./073_dpop_proofs.js";
import * as sessionIds from "./074_session_ids.js";
import * as backchannelLogout from "./075_backchannel_logout.js";
import * as applicationProfile from "./076_application_profile.js";
import * as pushedRequestLimits from "./077_pushed_request_limits.js";
import * as accessTokensByUser from "./078_access_tokens_by_user.js";
import * as opaqueAuthentication from "./079_opaque_authentication.js";

interface Migration {
  name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

// Migrations are imported, not globbed from disk, so they work the same from
// TypeScript sources and from the built JavaScript. Append new ones in order.
const all: Migration[] = [
  { name: "001_initial", ...initial },
  { name: "003_authorization", ...authorization },
  { name: "005_signing_key_usage", ...signingKeyUsage },
  { name: "006_cleanup_indexes", ...cleanupIndexes },
  { name: "007_federation", ...federation },
  { name: "008_signing_key_hold", ...signingKeyHold },
  { name: "009_tokens_without_family", ...tokensWithoutFamily },
  { name: "012_refresh_tokens_by_user", ...refreshTokensByUser },
  { name: "013_code_claims", ...codeClaims },
  { name: "014_token_format", ...tokenFormat },
  { name: "015_application_allowed_origins", ...applicationAllowedOrigins },
  { name: "016_provider_options", ...providerOptions },
  { name: "020_signing_alg", ...signingAlg },
  { name: "021_access_token_strategy", ...accessTokenStrategy },
  { name: "022_opaque_userinfo_claims", ...opaqueUserinfoClaims },
  { name: "023_audit_events", ...auditEvents },
  { name: "024_public_client", ...publicClient },
  { name: "025_refresh_id_token_claims", ...refreshIdTokenClaims },
  { name: "030_resources", ...resources },
  { name: "031_client_registration", ...clientRegistration },
  { name: "032_consents", ...consents },
  { name: "040_client_assertions", ...clientAssertions },
  { name: "041_device_codes", ...deviceCodes },
  { name: "042_token_exchange", ...tokenExchange },
  { name: "050_user_factors", ...userFactors },
  { name: "053_own_account", ...ownAccount },
  { name: "054_device_code_amr", ...deviceCodeAmr },
  { name: "051_webauthn_challenge_binding", ...webauthnChallengeBinding },
  { name: "060_self_service", ...selfService },
  { name: "070_pushed_authorization_requests", ...pushedAuthorizationRequests },
  { name: "072_dpop_binding", ...dpopBinding },
  { name: "073_dpop_proofs", ...dpopProofs },
  { name: "074_session_ids", ...sessionIds },
  { name: "075_backchannel_logout", ...backchannelLogout },
  { name: "076_application_profile", ...applicationProfile },
  { name: "077_pushed_request_limits", ...pushedRequestLimits },
  { name: "078_access_tokens_by_user", ...accessTokensByUser },
  { name: "079_opaque_authentication", ...opaqueAuthentication },
];

export const migrations: Knex.MigrationSource<Migration> = {
  getMigrations: async () => all,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => m,
};
