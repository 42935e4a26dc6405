import { randomInt } from "node:crypto";
import type { Clock } from "../shared/clock.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";
import type { ApplicationRepository } from "../store/applications.js";
import type { DeviceCodeRecord, DeviceCodeRepository } from "../store/deviceCodes.js";
import { ConflictError } from "../store/errors.js";
import { resolveClient, type BasicCredentials, type ClientAuthenticator, type PresentedClient } from "./clientAuth.js";
import { OAuthError } from "./errors.js";
import { grantEnabled } from "./grants/index.js";
import type { LoginThrottle } from "./loginThrottle.js";
import { isPublicClient } from "./publicClients.js";
import { parseScope } from "./scopes.js";
import { randomToken, sha256 } from "./secrets.js";
import { DEVICE_CODE_GRANT_TYPE } from "./grants/deviceCode.js";

/** Where users type the code (RFC 8628 §3.3). */
export const DEVICE_PAGE_PATH = "/device";
/** RFC 8628 §6.1: consonants only (no vowels, so no words), unambiguous in upper case. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LENGTH = 8;
export const DEFAULT_DEVICE_CODE_TTL_SECONDS = 600;
export const MIN_DEVICE_CODE_TTL_SECONDS = 10;
/** RFC 8628 §3.2: the interval's default. */
export const DEVICE_POLL_INTERVAL_SECONDS = 5;

/** A new user code: 8 random letters of the alphabet; guessing is rationed by the per-address budget (RFC 8628 §5.1). */
export function newUserCode(): string {
  return Array.from({ length: USER_CODE_LENGTH }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join("");
}

/** A user code as typed: case, dashes and spaces do not matter (RFC 8628 §6.1). Undefined when it cannot be one. */
export function normalizeUserCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, "");
  return code.length === USER_CODE_LENGTH && [...code].every((c) => USER_CODE_ALPHABET.includes(c)) ? code : undefined;
}

/** XXXX-XXXX, as shown and returned. */
export const displayUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** RFC 8628 §3.2 response. */
export interface DeviceAuthorizationAnswer {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
  expiresIn: number;
  interval: number;
}

/** A code the user typed, with the application that asked, for the /device page. */
export interface PendingDevice {
  record: DeviceCodeRecord;
  app: ApplicationRecord;
}

export interface DeviceAuthorizationDeps {
  issuer: string;
  clock: Clock;
  codes: DeviceCodeRepository;
  applications: Pick<ApplicationRepository, "findByClientId">;
  clients: ClientAuthenticator;
  /** The login form's per-address budget, which wrong user codes spend (RFC 8628 §5.1). */
  throttle: Pick<LoginThrottle, "attemptFromAddress">;
  ttlSeconds: number;
}

/**
 * The device authorization grant (RFC 8628): the device authorization
 * endpoint, and the /device page's look-up and decision. Polls are the
 * grant's module (grants/deviceCode.ts).
 */
export class DeviceAuthorizations {
  constructor(private readonly deps: DeviceAuthorizationDeps) {}

  /** RFC 8628 §3.1-3.2: a confidential client authenticates; a public one names itself. */
  async start(request: PresentedClient & { scope: string }, basic: BasicCredentials, clientAddress?: string): Promise<DeviceAuthorizationAnswer> {
    const { clients, codes, clock, issuer, ttlSeconds } = this.deps;
    const client = resolveClient(request, basic);
    const app = client.clientSecret || client.clientAssertion
      ? await clients.authenticate(client, clientAddress, "device_authorization")
      : await clients.identify(client);
    if (!client.clientSecret && !client.clientAssertion && !isPublicClient(app)) throw new OAuthError("invalid_client", "client authentication failed");
    if (!grantEnabled(app.grantTypes, DEVICE_CODE_GRANT_TYPE)) {
      throw new OAuthError("unauthorized_client", `the ${DEVICE_CODE_GRANT_TYPE} grant is not enabled for this application`);
    }
    const deviceCode = randomToken();
    const now = clock.now();
    for (let attempt = 0; ; attempt++) {
      const userCode = newUserCode();
      try {
        await codes.insert({
          deviceCodeHash: sha256(deviceCode), userCode, clientId: app.clientId, scope: parseScope(request.scope).join(" "), status: "pending",
          userId: null, authTime: null, intervalSeconds: DEVICE_POLL_INTERVAL_SECONDS, lastPolledAt: 0, createdAt: now, expiresAt: now + ttlSeconds * 1000,
        });
      } catch (err) {
        // A user code already live: draw another.
        if (err instanceof ConflictError && attempt < 5) continue;
        throw err;
      }
      const verificationUri = `${issuer}${DEVICE_PAGE_PATH}`;
      return {
        deviceCode,
        userCode: displayUserCode(userCode),
        verificationUri,
        verificationUriComplete: `${verificationUri}?user_code=${displayUserCode(userCode)}`,
        expiresIn: ttlSeconds,
        interval: DEVICE_POLL_INTERVAL_SECONDS,
      };
    }
  }

  /**
   * The pending code a user typed at /device. Every look-up takes one failure
   * from the address's budget first, as a password does, and a found code
   * gives it back; so a locked address is refused even the right code.
   */
  async lookup(typed: string, clientAddress: string | undefined): Promise<PendingDevice> {
    const found = await this.deps.throttle.attemptFromAddress(clientAddress, async () => {
      const userCode = normalizeUserCode(typed);
      const record = userCode ? await this.deps.codes.findByUserCode(userCode, this.deps.clock.now()) : undefined;
      const app = record?.status === "pending" ? await this.deps.applications.findByClientId(record.clientId) : undefined;
      return record && app ? { record, app } : undefined;
    });
    if (!found) throw new OAuthError("invalid_grant", "that code is not valid, or has expired");
    return found;
  }

  /** The signed-in user allows or denies a pending code. */
  /** `amr`: what the user's sign-in proved (RFC 8176), which the device's tokens carry. */
  async decide(userCode: string, user: UserRecord, authTime: number, allow: boolean, amr?: readonly string[]): Promise<void> {
    const decided = await this.deps.codes.decide(userCode, allow ? "approved" : "denied", user.id, authTime, this.deps.clock.now(), amr?.join(" "));
    if (!decided) throw new OAuthError("invalid_grant", "that code was already used, or has expired");
  }
}
