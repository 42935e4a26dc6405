import { randomUUID } from "node:crypto";
import { createPublicKey } from "node:crypto";
import { exportJWK, generateKeyPair, importJWK, type JWK, type SignJWT } from "jose";
import type { Clock } from "../shared/clock.js";
import type { SigningKeyRepository } from "../store/keys.js";
import { selfSignedCertificate } from "./certificate.js";
import { echo, OAuthError } from "./errors.js";
import type { SigningKeyRecord } from "../shared/model.js";

export const SIGNING_ALG = "RS256";

/** How often an instance re-reads the keys unless configured otherwise. */
export const DEFAULT_KEY_RELOAD_MS = 10_000;

/** Makes the key pair of a new signing key: the slow step of a rotation (tests share one). */
export type KeyPairGenerator = () => ReturnType<typeof generateKeyPair>;

export const generateSigningKeyPair: KeyPairGenerator = () => generateKeyPair(SIGNING_ALG, { extractable: true, modulusLength: 2048 });

/** Whatever jose signs with on this platform (a WebCrypto key on Node). */
export type PrivateSigningKey = Parameters<SignJWT["sign"]>[0];

export interface PublicJwk extends JWK {
  kid: string;
}

interface LoadedKey {
  record: SigningKeyRecord;
  privateKey: PrivateSigningKey;
  publicJwk: PublicJwk;
}

/**
 * How long a rotated key is published before it signs, unless configured
 * otherwise, so that relying parties' JWKS caches hold it before they meet it.
 */
export const DEFAULT_KEY_ACTIVATION_DELAY_MS = 10 * 60_000;

/**
 * Allowance, after a key is superseded, for clocks that differ between
 * instances and for tokens being minted at that moment, before the key may
 * be retired.
 */
const SIGNING_GRACE_MS = 60_000;

/**
 * The signing keys, shared through the database so every instance signs and
 * publishes the same set. Each instance re-reads them at most `reloadMs`
 * apart, which bounds how long a rotation takes to reach it.
 *
 * A key's life: rotated in (published, not yet signing) -> signing once its
 * `activeFrom` comes -> superseded by a newer active key (still published) ->
 * retired when the last token it signed has expired (no longer published).
 */
export class KeyRing {
  private keys: LoadedKey[] = [];
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly repo: SigningKeyRepository,
    private readonly clock: Clock,
    private readonly reloadMs = DEFAULT_KEY_RELOAD_MS,
    private readonly activationDelayMs = DEFAULT_KEY_ACTIVATION_DELAY_MS,
    private readonly generateKeyPair: KeyPairGenerator = generateSigningKeyPair,
  ) {}

  /** Load the keys, creating the first one, signing at once, on a new database. */
  async init(): Promise<void> {
    if ((await this.repo.list()).length === 0) await this.rotate(0);
    await this.refresh();
  }

  /** The newest key whose activation time has come. */
  async signingKey(): Promise<{ kid: string; key: PrivateSigningKey }> {
    const key = await this.signing();
    return { kid: key.record.kid, key: key.privateKey };
  }

  /** Whether the loaded keys include one that signs now (readiness). */
  hasSigningKey(): boolean {
    return this.active() !== undefined;
  }

  /** Public keys still published (not retired). */
  async publicJwks(): Promise<PublicJwk[]> {
    await this.fresh();
    return this.keys.filter((k) => k.record.retiredAt === null).map((k) => k.publicJwk);
  }

  async list(): Promise<SigningKeyRecord[]> {
    return this.repo.list();
  }

  /**
   * Create a new key. It is published at once and signs once `delayMs` has
   * passed; every instance sees it within `reloadMs`.
   */
  async rotate(delayMs = this.activationDelayMs): Promise<SigningKeyRecord> {
    const { privateKey, publicKey } = await this.generateKeyPair();
    const kid = randomUUID();
    const now = this.clock.now();
    const record: SigningKeyRecord = {
      kid,
      alg: SIGNING_ALG,
      privateJwk: JSON.stringify(await exportJWK(privateKey)),
      publicJwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, use: "sig", alg: SIGNING_ALG }),
      createdAt: now,
      activeFrom: now + delayMs,
      retiredAt: null,
    };
    await this.repo.insert(record);
    this.loadedAt = -Infinity;
    return record;
  }

  /** PEM public key and a self-signed certificate for one key, or the signing one. */
  async export(kid?: string): Promise<{ kid: string; publicKeyPem: string; certificatePem: string }> {
    const record = kid ? (await this.repo.list()).find((r) => r.kid === kid) : (await this.signing()).record;
    if (!record) throw new OAuthError("not_found", `no signing key ${echo(kid ?? "")}`.trim());
    const publicKeyPem = createPublicKey({ key: JSON.parse(record.publicJwk), format: "jwk" })
      .export({ type: "spki", format: "pem" })
      .toString();
    const certificatePem = selfSignedCertificate(JSON.parse(record.privateJwk), record.kid, this.clock.now());
    return { kid: record.kid, publicKeyPem, certificatePem };
  }

  /** The loaded key that signs now, if any. */
  private active(): LoadedKey | undefined {
    const now = this.clock.now();
    return this.keys.find((k) => k.record.activeFrom <= now && k.record.retiredAt === null);
  }

  /** The key that signs now, after a reload if one is due. */
  private async signing(): Promise<LoadedKey> {
    await this.fresh();
    const key = this.active();
    if (!key) throw new OAuthError("temporarily_unavailable", "no signing key is active");
    return key;
  }

  /**
   * Unretired keys that no instance can still be signing with: a newer key
   * became active (and every instance had loaded it) more than the grace ago.
   * Whether their tokens have expired is the database's to say.
   */
  private spent(records: SigningKeyRecord[], now: number): SigningKeyRecord[] {
    return records.filter((record, index) => {
      if (record.retiredAt !== null) return false;
      const newer = records.slice(0, index).filter((r) => r.retiredAt === null);
      const lastSigning = Math.min(...newer.map((r) => Math.max(r.activeFrom, r.createdAt + this.reloadMs)));
      return now >= lastSigning + SIGNING_GRACE_MS;
    });
  }

  private async fresh(): Promise<void> {
    if (this.clock.now() - this.loadedAt < this.reloadMs) return;
    // One reload at a time; concurrent callers share it.
    this.loading ??= this.refresh().finally(() => (this.loading = undefined));
    await this.loading;
  }

  /** Retire keys whose tokens have all expired, then re-read the set. */
  private async refresh(): Promise<void> {
    const now = this.clock.now();
    const records = await this.repo.list();
    for (const record of this.spent(records, now)) {
      if (await this.repo.retireIfUnused(record.kid, now)) record.retiredAt = now;
    }
    const loaded = new Map(this.keys.map((k) => [k.record.kid, k]));
    this.keys = await Promise.all(
      records.map(async (record) => {
        const known = loaded.get(record.kid);
        if (known) return { ...known, record };
        return {
          record,
          privateKey: (await importJWK(JSON.parse(record.privateJwk), record.alg)) as PrivateSigningKey,
          publicJwk: JSON.parse(record.publicJwk) as PublicJwk,
        };
      }),
    );
    this.loadedAt = now;
  }
}
