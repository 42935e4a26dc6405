import type { ApplicationRecord } from "../shared/model.js";

/**
 * Whether an application is a public client (RFC 6749 §2.1): one with no
 * secret anybody knows, such as a single-page or native app, or the
 * console's own (accounts/consoleClient.ts). Its stored hash is of 256
 * random bits nobody ever saw, so no secret matches it. What a public
 * client may do without a secret:
 * - redeem a code with PKCE, which it must use (authorizeRequest.ts; any
 *   application may redeem a code with a code_verifier and no secret);
 * - refresh, with rotation and reuse detection (grants/refreshToken.ts);
 * - revoke its own tokens (RFC 7009 §2.1; clientAuth.ts authenticateOrPublic).
 * It cannot introspect, and registration refuses it the client_credentials
 * and password grants (accounts/applications.ts).
 */
export function isPublicClient(app: Pick<ApplicationRecord, "publicClient">): boolean {
  return app.publicClient;
}
