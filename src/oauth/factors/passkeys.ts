import { randomBytes, randomUUID } from "node:crypto";
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  type VerifiedRegistrationResponse,
} from "@simplewebauthn/server";
import type { Clock } from "../../shared/clock.js";
import type { UserFactorRepository, WebAuthnChallengeRecord, WebAuthnChallengeRepository } from "../../store/userFactors.js";
import type { UserRepository } from "../../store/users.js";
import { ConflictError } from "../../store/errors.js";
import { userActor, type AuditTrail } from "../../shared/audit.js";
import type { UserFactorRecord, UserRecord } from "../../shared/model.js";
import { sha256 } from "../secrets.js";
import { passkeyAmr } from "./amr.js";
import type { FactorProof, SecondFactors } from "./secondFactors.js";

/** What the library found in a verified registration response. */
type RegistrationInfo = Extract<VerifiedRegistrationResponse, { verified: true }>["registrationInfo"];

/** Issue #46 §2: a challenge answers within five minutes, once. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
const MAX_NAME = 100;
const CHALLENGE = /^[A-Za-z0-9_-]{1,100}$/;

/** A passkey sign-in: whose, and what it proved. */
export interface PasskeySignIn {
  user: UserRecord;
  proof: FactorProof;
}

/** The relying party: the issuer's host is its id (WebAuthn §5.1.3: an IP address is none), its origin the only one accepted. */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

export function relyingPartyOf(issuer: string): RelyingParty {
  const url = new URL(issuer);
  return { id: url.hostname, origin: url.origin, name: url.hostname };
}

/** Browsers refuse an IP address as a relying-party id (WebAuthn §5.1.3 via the rules of a valid domain): no passkeys there. */
export function passkeysPossible(rp: RelyingParty): boolean {
  return !/^\d{1,3}(\.\d{1,3}){3}$/.test(rp.id) && !rp.id.startsWith("[");
}

/**
 * Passkeys (WebAuthn Level 2, issue #46 §2), with @simplewebauthn/server:
 * registration, a whole sign-in with a discoverable credential, and a second
 * factor after a password. Every ceremony answers a challenge of ours bound
 * to what asked for it, taken once and within five minutes (the store decides
 * atomically); the library checks origin, relying-party id, signature and
 * user presence; the store takes the signature counter only forward.
 */
export class Passkeys {
  readonly enabled: boolean;

  constructor(
    private readonly factors: UserFactorRepository,
    private readonly challenges: WebAuthnChallengeRepository,
    private readonly users: UserRepository,
    private readonly secondFactors: SecondFactors,
    private readonly clock: Clock,
    private readonly audit: AuditTrail,
    readonly rp: RelyingParty,
  ) {
    this.enabled = passkeysPossible(rp);
  }

  /** The user's passkeys, oldest first. */
  async list(userId: string): Promise<UserFactorRecord[]> {
    return (await this.factors.list(userId)).filter((f) => f.type === "passkey");
  }

  /** Options for adding a passkey (WebAuthn §5.4): a discoverable credential with user verification, none of the user's again. */
  async registrationOptions(user: UserRecord, binding: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.list(user.id);
    const options = await generateRegistrationOptions({
      rpName: this.rp.name,
      rpID: this.rp.id,
      userName: user.name,
      userDisplayName: user.displayName || user.name,
      userID: new TextEncoder().encode(user.id),
      challenge: randomBytes(32),
      attestationType: "none",
      excludeCredentials: existing.map((f) => ({ id: f.credentialId!, transports: f.transports })),
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
    });
    await this.newChallenge(options.challenge, "register", user.id, binding);
    return options;
  }

  /**
   * Add the passkey a registration response carries. Returns the recovery
   * codes to show when it is the user's first factor (issue #46 §3), an
   * empty list for a later one, or undefined when refused.
   */
  async register(user: UserRecord, responseJson: string, name: string, binding: string, clientAddress?: string): Promise<string[] | undefined> {
    const verified = await this.verifiedRegistration(user, responseJson, binding, clientAddress);
    if (!verified) return undefined;
    const hadFactor = await this.secondFactors.has(user.id);
    const added = await this.add(user, verified, name, async (factor) => (await this.factors.insert(factor), true), clientAddress);
    if (!added) return undefined;
    return hadFactor ? [] : this.secondFactors.newRecoveryCodes(user);
  }

  /**
   * The first factor a sign-in makes its user enrol (issue #46 §4), a passkey
   * added as on the account page, and only while the user has no factor (the
   * store decides, so a factor added meanwhile, or a parallel enrolment,
   * wins). Returns what it proves, as a passkey second factor does, and the
   * recovery codes to show; undefined when refused.
   */
  async enrolFirst(user: UserRecord, responseJson: string, binding: string, clientAddress?: string): Promise<{ proof: FactorProof; codes: string[] } | undefined> {
    const verified = await this.verifiedRegistration(user, responseJson, binding, clientAddress);
    if (!verified) return undefined;
    const factor = await this.add(user, verified, "", (f) => this.factors.insertFirst(f), clientAddress);
    if (!factor) return undefined;
    // The one-time code secret shown beside the passkey button was not chosen: it never becomes a factor.
    await this.factors.deleteUnconfirmed(user.id);
    return { proof: { amr: passkeyAmr(verified), factorId: factor.id }, codes: await this.secondFactors.newRecoveryCodes(user) };
  }

  /** A registration response to a live challenge of this binding for this user, checked by the library (user verification required). */
  private async verifiedRegistration(user: UserRecord, responseJson: string, binding: string, clientAddress?: string): Promise<RegistrationInfo | undefined> {
    const response = parse<RegistrationResponseJSON>(responseJson);
    const challenge = response && (await this.takeChallenge(response.response?.clientDataJSON, binding, "register", user.id));
    let verified;
    try {
      verified = challenge && (await verifyRegistrationResponse({
        response: response!,
        expectedChallenge: challenge.challenge,
        expectedOrigin: this.rp.origin,
        expectedRPID: this.rp.id,
        requireUserVerification: true,
      }));
    } catch {
      verified = undefined;
    }
    if (!verified?.verified) return this.refusedRegistration(user, challenge ? "invalid_response" : "invalid_challenge", clientAddress);
    return verified.registrationInfo;
  }

  /** Store the verified passkey with `insert` (false: the store refused it) and audit `passkey_added`. */
  private async add(user: UserRecord, info: RegistrationInfo, name: string, insert: (factor: UserFactorRecord) => Promise<boolean>, clientAddress?: string): Promise<UserFactorRecord | undefined> {
    const { credential } = info;
    const factor: UserFactorRecord = {
      id: randomUUID(),
      userId: user.id,
      type: "passkey",
      name: cleanName(name) || "Passkey",
      secret: null,
      credentialId: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString("base64url"),
      counter: credential.counter,
      transports: credential.transports ?? [],
      confirmed: true,
      createdAt: this.clock.now(),
      lastUsedAt: null,
    };
    try {
      if (!(await insert(factor))) return this.refusedRegistration(user, "has_factor", clientAddress);
    } catch (err) {
      // The credential is registered already (to this user or another): unique in the store.
      if (err instanceof ConflictError) return this.refusedRegistration(user, "credential_taken", clientAddress);
      throw err;
    }
    this.audit.record({ event: "passkey_added", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientAddress, details: { factorId: factor.id, synced: info.credentialBackedUp } });
    return factor;
  }

  /** Options for a sign-in with any discoverable passkey of this relying party: no user named (WebAuthn §5.4.4 empty allowCredentials). */
  async signInOptions(binding: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const options = await generateAuthenticationOptions({ rpID: this.rp.id, challenge: randomBytes(32), userVerification: "required" });
    await this.newChallenge(options.challenge, "signin", null, binding);
    return options;
  }

  /** Options for a second factor after a password: one of this user's passkeys. */
  async factorOptions(user: UserRecord, binding: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const allowCredentials = (await this.list(user.id)).map((f) => ({ id: f.credentialId!, transports: f.transports }));
    const options = await generateAuthenticationOptions({ rpID: this.rp.id, challenge: randomBytes(32), userVerification: "preferred", allowCredentials });
    await this.newChallenge(options.challenge, "factor", user.id, binding);
    return options;
  }

  /** A whole sign-in: user verification required, the user found by the credential; undefined when refused. */
  async signIn(responseJson: string, binding: string, clientAddress?: string): Promise<PasskeySignIn | undefined> {
    const checked = await this.check(responseJson, binding, "signin", undefined, clientAddress);
    if (!checked) return undefined;
    const { user, proof } = checked;
    this.audit.record({ event: "sign_in", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientAddress, details: { method: "passkey" } });
    // The key (possession) and the verified user (a PIN or biometric): two factors (RFC 8176 §2 `mfa`).
    return { user, proof: { ...proof, amr: [...proof.amr, "mfa"] } };
  }

  /** A second factor for `user`, who passed a first one; undefined when refused. */
  async verifyFactor(user: UserRecord, responseJson: string, binding: string, clientAddress?: string): Promise<FactorProof | undefined> {
    return (await this.check(responseJson, binding, "factor", user, clientAddress))?.proof;
  }

  async rename(user: UserRecord, factorId: string, name: string): Promise<boolean> {
    const factor = await this.factors.find(factorId);
    return factor?.type === "passkey" && this.secondFactors.rename(user, factorId, name);
  }

  /** Remove one of the user's passkeys (audit `passkey_removed`, by SecondFactors.remove). */
  async remove(user: UserRecord, factorId: string): Promise<boolean> {
    const factor = await this.factors.find(factorId);
    return factor?.type === "passkey" && factor.userId === user.id && this.secondFactors.remove(user, factorId);
  }

  private async check(responseJson: string, binding: string, purpose: "signin" | "factor", expectedUser: UserRecord | undefined, clientAddress?: string): Promise<PasskeySignIn | undefined> {
    const response = parse<AuthenticationResponseJSON>(responseJson);
    const challenge = response && (await this.takeChallenge(response.response?.clientDataJSON, binding, purpose, expectedUser?.id ?? null));
    if (!response || !challenge) return this.refusedUse(expectedUser, "invalid_challenge", clientAddress);
    const factor = typeof response.id === "string" && response.id.length <= 1024 ? await this.factors.findByCredentialId(response.id) : undefined;
    const user = factor?.type === "passkey" ? await this.users.findById(factor.userId) : undefined;
    // WebAuthn §7.2 steps 5-6: the credential is the expected user's, and so is any user handle it returns.
    const handle = response.response?.userHandle;
    const ownHandle = !handle || handle === Buffer.from(factor?.userId ?? "").toString("base64url");
    // As for a password (oauth/userAuth.ts): no sign-in for a disabled user, or one whose email must be verified first.
    const usable = user && !user.disabled && !(user.mustVerifyEmail && !user.emailVerified);
    if (!factor || !user || !usable || !ownHandle || (expectedUser && user.id !== expectedUser.id)) return this.refusedUse(expectedUser ?? user, "unknown_credential", clientAddress);
    let info;
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge.challenge,
        expectedOrigin: this.rp.origin,
        expectedRPID: this.rp.id,
        credential: { id: factor.credentialId!, publicKey: Buffer.from(factor.publicKey ?? "", "base64url"), counter: factor.counter, transports: factor.transports },
        requireUserVerification: purpose === "signin",
      });
      info = verified.verified ? verified.authenticationInfo : undefined;
    } catch {
      info = undefined;
    }
    if (!info) return this.refusedUse(user, "invalid_response", clientAddress);
    // WebAuthn §6.1.1: a counter that does not go forward is a cloned authenticator; the store decides, atomically.
    if (!(await this.factors.acceptCounter(factor.id, info.newCounter, this.clock.now()))) return this.refusedUse(user, "counter", clientAddress);
    const amr = passkeyAmr(info);
    this.audit.record({ event: "factor_used", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientAddress, details: { type: "passkey", factorId: factor.id, amr } });
    return { user, proof: { amr, factorId: factor.id } };
  }

  private async newChallenge(challenge: string, purpose: WebAuthnChallengeRecord["purpose"], userId: string | null, binding: string): Promise<void> {
    await this.challenges.insert({ challenge, purpose, userId, binding: bindingHash(binding), expiresAt: this.clock.now() + CHALLENGE_TTL_MS });
  }

  /** The challenge a response's client data names, taken (deleted) if it is ours, live, for this binding, purpose and user. */
  private async takeChallenge(clientDataJSON: unknown, binding: string, purpose: WebAuthnChallengeRecord["purpose"], userId: string | null): Promise<WebAuthnChallengeRecord | undefined> {
    const challenge = challengeOf(clientDataJSON);
    if (!challenge) return undefined;
    const taken = await this.challenges.take(challenge, bindingHash(binding), this.clock.now());
    return taken && taken.purpose === purpose && taken.userId === userId ? taken : undefined;
  }

  private refusedRegistration(user: UserRecord, reason: string, clientAddress?: string): undefined {
    this.audit.record({ event: "passkey_added", outcome: "failure", actor: userActor(user), userId: user.id, userName: user.name, clientAddress, details: { reason } });
    return undefined;
  }

  private refusedUse(user: UserRecord | undefined, reason: string, clientAddress?: string): undefined {
    const actor = user ? userActor(user) : { kind: "user" as const, id: "", name: "" };
    this.audit.record({ event: "factor_used", outcome: "failure", actor, userId: user?.id ?? null, userName: user?.name ?? null, clientAddress, details: { type: "passkey", reason } });
    return undefined;
  }
}

/** A challenge is stored by the hash of its binding: the binding (a request handle, a session hash) is no value to keep. */
const bindingHash = (binding: string) => sha256(`webauthn:${binding}`);

const cleanName = (name: string) => name.trim().slice(0, MAX_NAME);

function parse<T>(json: string): T | undefined {
  try {
    const value = JSON.parse(json) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

/** The `challenge` of base64url client data JSON (WebAuthn §5.8.1), if it has the shape of one of ours. */
function challengeOf(clientDataJSON: unknown): string | undefined {
  if (typeof clientDataJSON !== "string" || clientDataJSON.length > 4096) return undefined;
  const data = parse<{ challenge?: unknown }>(Buffer.from(clientDataJSON, "base64url").toString("utf8"));
  return typeof data?.challenge === "string" && CHALLENGE.test(data.challenge) ? data.challenge : undefined;
}
