import { randomUUID } from "node:crypto";
import { createPublicKey } from "node:crypto";
import { exportJWK, generateKeyPair, importJWK, type JWK, type SignJWT } from "jose";
import { noAudit, recordAdminChange, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import type { SigningKeyRepository } from "../store/keys.js";
import { selfSignedCertificate } from "./certificate.js";
import { echo, OAuthError } from "./errors.js";
import { DEFAULT_SIGNING_ALG, SIGNING_ALGS, type SigningAlg, type SigningKeyRecord } from "../shared/model.js";

/** The algorithm of the first key and of applications that name none. */
export const SIGNING_ALG: SigningAlg = DEFAULT_SIGNING_ALG;

/** How often an instance re-reads the keys unless configured otherwise. */
export const DEFAULT_KEY_RELOAD_MS = 10_000;

/** Makes the key pair of a new signing key: the slow step of a rotation (tests share one). */
export type KeyPairGenerator = (alg: SigningAlg) => ReturnType<typeof generateKeyPair>;

export const generateSigningKeyPair: KeyPairGenerator = (alg = SIGNING_ALG) =>
  // RSA (RS256, PS256) at 2048 bits; ES256 on P-256; EdDSA on Ed25519.
  generateKeyPair(alg, { extractable: true, modulusLength: 2048, ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}) });

/** An algorithm named by an admin (rotate, export): RS256 when empty. */
export function signingAlgOf(raw: string | undefined): SigningAlg {
  if (!raw) return SIGNING_ALG;
  if (!(SIGNING_ALGS as readonly string[]).includes(raw)) {
    throw new OAuthError("invalid_request", `alg: is not one of ${SIGNING_ALGS.join(", ")}`);
  }
  return raw as SigningAlg;
}

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
 *
 * Each algorithm (SIGNING_ALGS) has keys of its own with that life: a key
 * supersedes only keys of its algorithm. RS256's first key is made at start;
 * another algorithm's when the first token an application signs with it is
 * minted, once across instances (the repository creates it under a lock).
 */
export class KeyRing {
  private keys: LoadedKey[] = [];
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;
  /** First keys of an algorithm being made by this instance, shared by concurrent callers. */
  private readonly creating = new Map<SigningAlg, Promise<void>>();

  constructor(
    private readonly repo: SigningKeyRepository,
    private readonly clock: Clock,
    private readonly reloadMs = DEFAULT_KEY_RELOAD_MS,
    private readonly activationDelayMs = DEFAULT_KEY_ACTIVATION_DELAY_MS,
    private readonly generateKeyPair: KeyPairGenerator = generateSigningKeyPair,
  ) {}

  /** Load the keys, creating the first one, signing at once, on a new database. */
  async init(): Promise<void> {
    if (!(await this.repo.list()).some((r) => r.alg === SIGNING_ALG)) await this.rotate(0);
    await this.refresh();
  }

  /**
   * The newest key of `alg` whose activation time has come. The first token
   * of an algorithm without keys makes its first key, which signs at once.
   */
  async signingKey(alg: SigningAlg = SIGNING_ALG): Promise<{ kid: string; alg: SigningAlg; key: PrivateSigningKey }> {
    const key = await this.signing(alg);
    return { kid: key.record.kid, alg, key: key.privateKey };
  }

  /** Whether the loaded keys include an RS256 key that signs now (readiness). */
  hasSigningKey(): boolean {
    return this.active(SIGNING_ALG) !== undefined;
  }

  /** The kids of the keys that sign now, one per algorithm that has one. */
  async signingKids(): Promise<Set<string>> {
    await this.fresh();
    return new Set(SIGNING_ALGS.flatMap((alg) => this.active(alg)?.record.kid ?? []));
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
   * Create a new key of `alg`. It is published at once and signs once
   * `delayMs` has passed (at once if it is the algorithm's first published
   * key); every instance sees it within `reloadMs`.
   */
  async rotate(delayMs = this.activationDelayMs, alg: SigningAlg = SIGNING_ALG): Promise<SigningKeyRecord> {
    // An algorithm's first key has nothing to overlap with: it signs at once.
    const first = !(await this.repo.list()).some((r) => r.alg === alg && r.retiredAt === null);
    const record = await this.newKey(alg, first ? 0 : delayMs);
    await this.repo.insert(record);
    this.forget();
    await this.onRotate?.();
    recordAdminChange(this.audit, "key_rotated", { name: record.kid }, undefined, { kid: record.kid, alg: record.alg, activeFrom: record.activeFrom }, []);
    return record;
  }

  /**
   * Told of every rotation through this instance, after it reloads; the
   * rotation answers once it settles. `serve --workers` tells the sibling
   * processes with it, so they forget() too.
   */
  onRotate?: () => Promise<void>;

  /** Where rotations are recorded; set once the first key is made, which is no admin change. */
  audit: AuditTrail = noAudit;

  /** The next use re-reads the keys. */
  forget(): void {
    this.loadedAt = -Infinity;
  }

  /** PEM public key and a self-signed certificate for one key, or the one signing for `alg`. */
  async export(kid?: string, alg: SigningAlg = SIGNING_ALG): Promise<{ kid: string; alg: string; publicKeyPem: string; certificatePem: string }> {
    const record = kid ? (await this.repo.list()).find((r) => r.kid === kid) : (await this.signing(alg)).record;
    if (!record) throw new OAuthError("not_found", `no signing key ${echo(kid ?? "")}`.trim());
    const publicKeyPem = createPublicKey({ key: JSON.parse(record.publicJwk), format: "jwk" })
      .export({ type: "spki", format: "pem" })
      .toString();
    const certificatePem = selfSignedCertificate(JSON.parse(record.privateJwk), record.kid, this.clock.now());
    return { kid: record.kid, alg: record.alg, publicKeyPem, certificatePem };
  }

  private async newKey(alg: SigningAlg, delayMs: number): Promise<SigningKeyRecord> {
    const { privateKey, publicKey } = await this.generateKeyPair(alg);
    const kid = randomUUID();
    const now = this.clock.now();
    return {
      kid,
      alg,
      privateJwk: JSON.stringify(await exportJWK(privateKey)),
      publicJwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, use: "sig", alg }),
      createdAt: now,
      activeFrom: now + delayMs,
      retiredAt: null,
    };
  }

  /** The loaded key of `alg` that signs now, if any. */
  private active(alg: SigningAlg): LoadedKey | undefined {
    const now = this.clock.now();
    return this.keys.find((k) => k.record.alg === alg && k.record.activeFrom <= now && k.record.retiredAt === null);
  }

  /** The key of `alg` that signs now, after a reload if one is due; the algorithm's first if it has none. */
  private async signing(alg: SigningAlg): Promise<LoadedKey> {
    await this.fresh();
    let key = this.active(alg);
    if (!key && !this.keys.some((k) => k.record.alg === alg && k.record.retiredAt === null)) {
      await this.createFirst(alg);
      key = this.active(alg);
    }
    if (!key) throw new OAuthError("temporarily_unavailable", `no ${alg} signing key is active`);
    return key;
  }

  /**
   * Make the first key of `alg`, signing at once, unless another instance
   * has (the repository checks and inserts under a database lock); then
   * re-read the keys.
   */
  private async createFirst(alg: SigningAlg): Promise<void> {
    let pending = this.creating.get(alg);
    if (!pending) {
      pending = (async () => {
        const record = await this.newKey(alg, 0);
        await this.repo.insertFirstOf(record);
        await this.refresh();
      })().finally(() => this.creating.delete(alg));
      this.creating.set(alg, pending);
    }
    await pending;
  }

  /**
   * Unretired keys that no instance can still be signing with: a newer key
   * became active (and every instance had loaded it) more than the grace ago.
   * Whether their tokens have expired is the database's to say.
   */
  private spent(records: SigningKeyRecord[], now: number): SigningKeyRecord[] {
    return records.filter((record, index) => {
      if (record.retiredAt !== null) return false;
      const newer = records.slice(0, index).filter((r) => r.retiredAt === null && r.alg === record.alg);
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
