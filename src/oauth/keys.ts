import { randomUUID } from "node:crypto";
import { createPublicKey } from "node:crypto";
import { exportJWK, generateKeyPair, importJWK, type JWK, type SignJWT } from "jose";
import type { Clock } from "../clock.js";
import type { SigningKeyRecord, SigningKeyRepository } from "../store/keys.js";
import { selfSignedCertificate } from "./certificate.js";
import { echo, OAuthError } from "./errors.js";

export const SIGNING_ALG = "RS256";

/** How often an instance re-reads the keys unless configured otherwise. */
export const DEFAULT_KEY_RELOAD_MS = 10_000;

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
 * The signing keys, shared through the database so every instance signs and
 * publishes the same set. Each instance re-reads them at most `reloadMs`
 * apart, which bounds how long a rotation takes to reach it.
 */
export class KeyRing {
  private keys: LoadedKey[] = [];
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly repo: SigningKeyRepository,
    private readonly clock: Clock,
    private readonly reloadMs = DEFAULT_KEY_RELOAD_MS,
  ) {}

  /** Load the keys, creating the first one on a new database. */
  async init(): Promise<void> {
    if ((await this.repo.list()).length === 0) await this.rotate();
    await this.reload();
  }

  /** The newest key whose activation time has come. */
  async signingKey(): Promise<{ kid: string; key: PrivateSigningKey }> {
    const current = await this.current();
    return { kid: current.record.kid, key: current.privateKey };
  }

  /** Public keys still published (not retired). */
  async publicJwks(): Promise<PublicJwk[]> {
    await this.fresh();
    return this.keys.filter((k) => k.record.retiredAt === null).map((k) => k.publicJwk);
  }

  async list(): Promise<SigningKeyRecord[]> {
    return this.repo.list();
  }

  /** Create a new key that signs from now on, and publish it. */
  async rotate(): Promise<SigningKeyRecord> {
    const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true, modulusLength: 2048 });
    const kid = randomUUID();
    const now = this.clock.now();
    const record: SigningKeyRecord = {
      kid,
      alg: SIGNING_ALG,
      privateJwk: JSON.stringify(await exportJWK(privateKey)),
      publicJwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, use: "sig", alg: SIGNING_ALG }),
      createdAt: now,
      activeFrom: now,
      retiredAt: null,
    };
    await this.repo.insert(record);
    this.loadedAt = -Infinity;
    return record;
  }

  /** PEM public key and a self-signed certificate for one key, or the signing one. */
  async export(kid?: string): Promise<{ kid: string; publicKeyPem: string; certificatePem: string }> {
    const record = kid ? (await this.repo.list()).find((r) => r.kid === kid) : (await this.current()).record;
    if (!record) throw new OAuthError("not_found", `no signing key ${echo(kid ?? "")}`.trim());
    const publicKeyPem = createPublicKey({ key: JSON.parse(record.publicJwk), format: "jwk" })
      .export({ type: "spki", format: "pem" })
      .toString();
    const certificatePem = selfSignedCertificate(JSON.parse(record.privateJwk), record.kid, this.clock.now());
    return { kid: record.kid, publicKeyPem, certificatePem };
  }

  private async current(): Promise<LoadedKey> {
    await this.fresh();
    const now = this.clock.now();
    const key = this.keys.find((k) => k.record.activeFrom <= now && k.record.retiredAt === null);
    if (!key) throw new OAuthError("temporarily_unavailable", "no signing key is active");
    return key;
  }

  private async fresh(): Promise<void> {
    if (this.clock.now() - this.loadedAt < this.reloadMs) return;
    // One reload at a time; concurrent callers share it.
    this.loading ??= this.reload().finally(() => (this.loading = undefined));
    await this.loading;
  }

  private async reload(): Promise<void> {
    const records = await this.repo.list();
    this.keys = await Promise.all(
      records.map(async (record) => ({
        record,
        privateKey: (await importJWK(JSON.parse(record.privateJwk), record.alg)) as PrivateSigningKey,
        publicJwk: JSON.parse(record.publicJwk) as PublicJwk,
      })),
    );
    this.loadedAt = this.clock.now();
  }
}
