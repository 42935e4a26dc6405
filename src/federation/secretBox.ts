import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/** The shortest IDENTITY_SECRET_KEY accepted: it should hold at least 256 random bits. */
export const MIN_SECRET_KEY_LENGTH = 32;

const PREFIX = "aes256gcm:v1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value cannot be opened: no key, the wrong key, or altered data. */
export class SecretBoxError extends Error {}

/**
 * Encrypts secrets kept at rest (AES-256-GCM) under a key derived from
 * IDENTITY_SECRET_KEY with HKDF-SHA256. Each value gets a fresh random IV;
 * `context` (the provider's name, say) is authenticated with it, so a sealed
 * value copied to another row does not open there.
 *
 * Without a key, values are stored as given; opening returns them as they
 * are. A sealed value is recognised by its prefix.
 */
export class SecretBox {
  private readonly key: Buffer | undefined;

  constructor(secretKey: string | undefined) {
    if (secretKey !== undefined && secretKey.length < MIN_SECRET_KEY_LENGTH) {
      throw new Error(`IDENTITY_SECRET_KEY must be at least ${MIN_SECRET_KEY_LENGTH} characters`);
    }
    this.key = secretKey
      ? Buffer.from(hkdfSync("sha256", secretKey, "identity-service", "secrets at rest v1", 32))
      : undefined;
  }

  /** Whether values are encrypted when sealed. */
  get encrypting(): boolean {
    return this.key !== undefined;
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }

  seal(value: string, context: string): string {
    if (!this.key) return value;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context));
    const sealed = Buffer.concat([iv, cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return PREFIX + sealed.toString("base64url");
  }

  open(stored: string, context: string): string {
    if (!SecretBox.isSealed(stored)) return stored;
    if (!this.key) throw new SecretBoxError("it is encrypted and IDENTITY_SECRET_KEY is not set");
    const data = Buffer.from(stored.slice(PREFIX.length), "base64url");
    if (data.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError("the stored value is damaged");
    const decipher = createDecipheriv("aes-256-gcm", this.key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw new SecretBoxError("it does not decrypt with this IDENTITY_SECRET_KEY");
    }
  }
}
