import assert from "node:assert/strict";
import { generateKeyPairSync, KeyObject, randomUUID, sign } from "node:crypto";
import { DPoPProofs, DPOP_CLOCK_SKEW_SECONDS, DPOP_IAT_WINDOW_SECONDS, DPOP_SIGNING_ALGS, type ProofContext } from "../../src/oauth/dpop.js";
import { DPoPNonces, DPOP_NONCE_WINDOW_SECONDS } from "../../src/oauth/dpopNonces.js";
import { OAuthError } from "../../src/oauth/errors.js";
import { dpopKey, dpopProof, type DPoPKey } from "../support/dpop.js";

const HTU = "https://id.example/api/userinfo";
const CONTEXT: ProofContext = { proof: undefined, htm: "GET", htu: HTU };

/** A clock that stays where a test puts it. */
class StillClock {
  constructor(public ms = Date.now()) {}
  now(): number {
    return this.ms;
  }
  get seconds(): number {
    return Math.floor(this.ms / 1000);
  }
}

/** The jti store as an in-memory map, with the same contract (test/store/contract/dpop.spec.ts). */
class MemoryJtis {
  readonly rows = new Map<string, number>();
  async useOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    const until = this.rows.get(key);
    if (until !== undefined && until > now) return false;
    this.rows.set(key, expiresAt);
    return true;
  }
}

async function refusal(promise: Promise<unknown>): Promise<OAuthError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof OAuthError, String(err));
    return err;
  }
  assert.fail("the proof was accepted");
}

describe("DPoP proofs (RFC 9449 §4.3)", () => {
  let key: DPoPKey;
  let clock: StillClock;
  let jtis: MemoryJtis;
  let proofs: DPoPProofs;

  before(async () => {
    key = await dpopKey();
  });
  beforeEach(() => {
    clock = new StillClock();
    jtis = new MemoryJtis();
    proofs = new DPoPProofs(jtis, clock, undefined);
  });

  for (const alg of DPOP_SIGNING_ALGS) {
    it(`takes a proof signed with ${alg}, answering its key's thumbprint`, async () => {
      const algKey = await dpopKey(alg);
      const proof = await dpopProof(algKey, { htm: "GET", htu: HTU, iat: clock.seconds });
      assert.equal(await proofs.verify({ ...CONTEXT, proof }, "resource"), algKey.jkt);
    });
  }

  it("keeps a jti only until the proof could no longer be accepted", async () => {
    const proof = await dpopProof(key, { htm: "GET", htu: HTU, iat: clock.seconds });
    await proofs.verify({ ...CONTEXT, proof }, "token");
    assert.deepEqual([...jtis.rows.values()], [(clock.seconds + DPOP_IAT_WINDOW_SECONDS + DPOP_CLOCK_SKEW_SECONDS) * 1000]);
  });

  it("accepts an iat at the edges of its window, and refuses one beyond", async () => {
    for (const iat of [clock.seconds - DPOP_IAT_WINDOW_SECONDS + 1, clock.seconds + DPOP_CLOCK_SKEW_SECONDS]) {
      await proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU, iat }) }, "token");
    }
    for (const iat of [clock.seconds - DPOP_IAT_WINDOW_SECONDS - 2, clock.seconds + DPOP_CLOCK_SKEW_SECONDS + 2]) {
      const err = await refusal(proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU, iat }) }, "token"));
      assert.equal(err.code, "invalid_dpop_proof");
      assert.match(err.description, /iat/);
    }
  });

  it("answers a refusal at the token endpoint with 400, at a resource with 401 and a DPoP challenge", async () => {
    const atToken = await refusal(proofs.verify(CONTEXT, "token"));
    assert.deepEqual([atToken.code, atToken.status, atToken.answer?.challenge], ["invalid_dpop_proof", undefined, undefined]);
    const atResource = await refusal(proofs.verify(CONTEXT, "resource"));
    assert.deepEqual([atResource.code, atResource.status, atResource.answer?.challenge], ["invalid_dpop_proof", 401, "DPoP"]);
    assert.deepEqual(atResource.answer?.algs, DPOP_SIGNING_ALGS);
  });

  it("checks ath against the access token the proof goes with", async () => {
    const proof = await dpopProof(key, { htm: "GET", htu: HTU, accessToken: "the-token" });
    assert.match((await refusal(proofs.verify({ ...CONTEXT, proof }, "resource", "another-token"))).description, /ath/);
    const again = await dpopProof(key, { htm: "GET", htu: HTU, accessToken: "the-token" });
    assert.equal(await proofs.verify({ ...CONTEXT, proof: again }, "resource", "the-token"), key.jkt);
  });

  it("refuses missing or malformed claims, each naming what is wrong", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ jti: undefined }, /jti/],
      [{ jti: "x".repeat(257) }, /jti/],
      [{ htm: undefined }, /htm/],
      [{ htu: "not a url" }, /htu/],
      [{ htu: "https://id.example/api/userinfo/more" }, /htu/],
      [{ iat: undefined }, /iat/],
      [{ iat: "now" }, /iat/],
    ];
    for (const [over, why] of cases) {
      const proof = await dpopProof(key, { htm: "GET", htu: HTU, ...over });
      assert.match((await refusal(proofs.verify({ ...CONTEXT, proof }, "token"))).description, why, JSON.stringify(over));
    }
  });

  it("refuses a key that does not fit its alg, a short RSA key, and critical header parameters", async () => {
    // jose will neither sign with a key this short nor under another key type's alg, so these are signed by hand.
    const handSigned = (header: Record<string, unknown>, privateKey: KeyObject) => {
      const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
      const input = `${part({ typ: "dpop+jwt", ...header })}.${part({ jti: randomUUID(), htm: "GET", htu: HTU, iat: clock.seconds })}`;
      return `${input}.${sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
    };
    const short = generateKeyPairSync("rsa", { modulusLength: 1024 });
    const shortProof = handSigned({ alg: "RS256", jwk: short.publicKey.export({ format: "jwk" }) }, short.privateKey);
    const ecPrivate = KeyObject.from(key.keyPair.privateKey as unknown as Parameters<typeof KeyObject.from>[0]);
    const ecUnderRsaAlg = handSigned({ alg: "RS256", jwk: key.publicJwk }, ecPrivate);
    const cases: [string, RegExp][] = [
      [ecUnderRsaAlg, /RSA key for its alg/],
      [await dpopProof(key, { htm: "GET", htu: HTU }, { jwk: { ...key.publicJwk, crv: "P-384" } }), /EC P-256 key/],
      [shortProof, /2048 bits/],
      [handSigned({ alg: "ES256", jwk: key.publicJwk, crit: ["exp"], exp: 1 }, ecPrivate), /critical/],
      [await dpopProof(key, { htm: "GET", htu: HTU }, { jwk: { kty: "EC", crv: "P-256", x: key.publicJwk.x } }), /lacks y/],
    ];
    for (const [proof, why] of cases) assert.match((await refusal(proofs.verify({ ...CONTEXT, proof }, "token"))).description, why);
  });

  it("compares htu as URLs: the host's case and the default port do not matter, the path does", async () => {
    for (const htu of ["https://ID.example/api/userinfo", "https://id.example:443/api/userinfo"]) {
      await proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu }) }, "token");
    }
    const err = await refusal(proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: "http://id.example/api/userinfo" }) }, "token"));
    assert.match(err.description, /htu/);
  });

  describe("with server nonces (§8)", () => {
    let nonces: DPoPNonces;
    beforeEach(() => {
      nonces = new DPoPNonces("a secret every instance shares", clock);
    });

    it("under `required`, asks a proof without a nonce for one, carrying a fresh nonce", async () => {
      proofs = new DPoPProofs(jtis, clock, nonces, "required");
      const err = await refusal(proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU }) }, "resource"));
      assert.equal(err.code, "use_dpop_nonce");
      assert.equal(err.answer?.dpopNonce, nonces.current());
      await proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU, nonce: nonces.current() }) }, "resource");
    });

    it("under `offer`, takes a proof without a nonce, but asks again for a bad one, and for a stale iat", async () => {
      proofs = new DPoPProofs(jtis, clock, nonces, "offer");
      await proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU }) }, "token");
      const bad = await refusal(proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU, nonce: "0.AAAAAAAAAAAAAAAAAAAAAA" }) }, "token"));
      assert.equal(bad.code, "use_dpop_nonce");
      const stale = await refusal(proofs.verify({ ...CONTEXT, proof: await dpopProof(key, { htm: "GET", htu: HTU, iat: clock.seconds - 600 }) }, "token"));
      assert.equal(stale.code, "use_dpop_nonce");
    });

    it("holds a nonce for its window and the next, and across instances sharing the secret", () => {
      const nonce = nonces.current();
      const elsewhere = new DPoPNonces("a secret every instance shares", clock);
      assert.ok(elsewhere.isFresh(nonce));
      assert.ok(!new DPoPNonces("another secret", clock).isFresh(nonce));
      clock.ms += DPOP_NONCE_WINDOW_SECONDS * 1000;
      assert.ok(nonces.isFresh(nonce), "the next window");
      clock.ms += DPOP_NONCE_WINDOW_SECONDS * 1000;
      assert.ok(!nonces.isFresh(nonce), "two windows on");
      assert.ok(!nonces.isFresh(`${nonce}x`) && !nonces.isFresh("") && !nonces.isFresh("zzzzzzzzzzzzz.AAAAAAAAAAAAAAAAAAAAAA"));
    });
  });
});
