import { parseAmr } from "../factors/amr.js";
import { epochSeconds } from "../../shared/clock.js";
import { OAuthError } from "../errors.js";
import { isPublicClient } from "../publicClients.js";
import { sha256 } from "../secrets.js";
import { requireParam } from "./params.js";
import { defineGrant } from "./types.js";

/** RFC 8628 §7.2: the grant type a device polls with. */
export const DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";

/**
 * Device Authorization Grant (RFC 8628 §3.4-3.5): the device polls with its
 * device code until the user has decided at /device. The store decides each
 * poll in conditional statements (store/deviceCodes.ts), so a code yields one
 * token response however many polls arrive at once.
 */
export const deviceCodeGrant = defineGrant({
  grantType: DEVICE_CODE_GRANT_TYPE,
  shortName: "device_code",
  parameters: ["deviceCode"],
  alwaysEnabled: false,
  needsSecret: false,
  // §3.4: a public client names itself; a confidential one authenticates.
  allowsPublicClient: (_params, app) => isPublicClient(app),
  async handle(app, params, deps) {
    const deviceCode = requireParam(params.deviceCode, "device_code");
    const now = deps.clock.now();
    const outcome = await deps.store.deviceCodes.poll(sha256(deviceCode), app.clientId, now);
    if (outcome.kind === "unknown") throw new OAuthError("invalid_grant", "unknown device_code");
    const { record } = outcome;
    if (record.expiresAt <= now) throw new OAuthError("expired_token", "the device code has expired; start again");
    if (outcome.kind === "too_fast") throw new OAuthError("slow_down", `poll at most every ${record.intervalSeconds} seconds`);
    if (outcome.kind === "polled") {
      if (record.status === "pending") throw new OAuthError("authorization_pending", "the user has not decided yet");
      if (record.status === "denied") throw new OAuthError("access_denied", "the user denied the request", 400);
      throw new OAuthError("invalid_grant", "the device code was already used");
    }
    const user = record.userId ? await deps.store.users.findById(record.userId) : undefined;
    if (!user || user.disabled) throw new OAuthError("invalid_grant", "the user who allowed this device is no longer active");
    return deps.minter.mint({
      app,
      user,
      scopes: record.scope.split(" "),
      authTime: record.authTime ?? epochSeconds(deps.clock),
      amr: parseAmr(record.amr),
      idToken: true,
      refreshToken: true,
    });
  },
});
