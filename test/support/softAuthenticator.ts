import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from "@simplewebauthn/server";

const b64url = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString("base64url");
const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest();

// WebAuthn §6.1 authenticator data flags.
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

export interface SoftAuthenticatorOptions {
  /** The origin the "browser" puts in the client data (an attacker's page would put its own). */
  origin: string;
  /** Backup eligible and backed up: a synced passkey. */
  synced?: boolean;
  /** Whether the user is verified (UV flag). */
  userVerified?: boolean;
}

/**
 * A software WebAuthn authenticator and the client around it (WebAuthn
 * §6, none attestation, ES256), for tests that need answers a browser would
 * not give: a counter set back (a clone), another origin, a replay.
 */
export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  private readonly key: KeyObject;
  private readonly cose: Uint8Array;
  /** The signature counter the next assertion carries (set it back to act as a clone). */
  counter = 0;
  userHandle = "";

  constructor(readonly options: SoftAuthenticatorOptions) {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.key = privateKey;
    const jwk = publicKey.export({ format: "jwk" });
    // RFC 9053 §7.1.1: an EC2 key, ES256.
    this.cose = isoCBOR.encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, "base64url")], [-3, Buffer.from(jwk.y!, "base64url")]]));
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  /** navigator.credentials.create() with these options. */
  register(options: PublicKeyCredentialCreationOptionsJSON, override: Partial<{ origin: string; challenge: string }> = {}): RegistrationResponseJSON {
    this.userHandle = options.user.id;
    const clientData = this.clientData("webauthn.create", override.challenge ?? options.challenge, override.origin);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([this.authData(options.rp.id!, AT), Buffer.alloc(16), idLength, this.credentialId, this.cose]);
    const attestationObject = isoCBOR.encode(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()], ["authData", new Uint8Array(authData)]]) as never);
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: { clientDataJSON: b64url(clientData), attestationObject: b64url(attestationObject), transports: ["internal"] },
      clientExtensionResults: {},
    };
  }

  /** navigator.credentials.get() with these options; the counter goes up first, as a real authenticator's does. */
  assert(options: PublicKeyCredentialRequestOptionsJSON, rpId: string, override: Partial<{ origin: string; challenge: string }> = {}): AuthenticationResponseJSON {
    this.counter += 1;
    const clientData = this.clientData("webauthn.get", override.challenge ?? options.challenge, override.origin);
    const authData = this.authData(options.rpId ?? rpId, 0);
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientData)]), this.key);
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: { clientDataJSON: b64url(clientData), authenticatorData: b64url(authData), signature: b64url(signature), userHandle: this.userHandle || undefined },
      clientExtensionResults: {},
    };
  }

  private clientData(type: string, challenge: string, origin = this.options.origin): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  private authData(rpId: string, extraFlags: number): Buffer {
    const synced = this.options.synced ? BE | BS : 0;
    const flags = UP | (this.options.userVerified === false ? 0 : UV) | synced | extraFlags;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), counter]);
  }
}
