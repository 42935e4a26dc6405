import assert from "node:assert/strict";
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from "jose";
import { OAuthError } from "../../src/oauth/errors.js";
import { REQUEST_OBJECT_JTI_MAX_KEEP_SECONDS, RequestObjects } from "../../src/oauth/requestObject.js";
import type { ApplicationRecord } from "../../src/shared/model.js";
import { FakeClock } from "../support/clock.js";

/** Single-use keys in memory, as the store keeps them: a key and when its row may be taken over. */
class MemoryJtis {
  readonly rows = new Map<string, number>();
  async useOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    const live = this.rows.get(key);
    if (live !== undefined && live > now) return false;
    this.rows.set(key, expiresAt);
    return true;
  }
}

describe("request objects (RFC 9101): claims to authorize parameters", () => {
  const ISSUER = "https://id.example";
  const app = { clientId: "client-a", jwks: "{}", jwksUri: "" } as ApplicationRecord;
  const clock = new FakeClock();
  const refused = (err: unknown) => err instanceof OAuthError && err.code === "invalid_request_object";
  let jtis: MemoryJtis;
  let objects: RequestObjects;
  let keys: ReturnType<typeof createLocalJWKSet>;
  let sign: (claims: Record<string, unknown>) => Promise<string>;

  before(async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), alg: "ES256" }] });
    sign = (claims) => new SignJWT({ iss: app.clientId, aud: ISSUER, ...claims }).setProtectedHeader({ alg: "ES256" }).sign(privateKey);
  });
  beforeEach(() => {
    jtis = new MemoryJtis();
    objects = new RequestObjects(ISSUER, clock, { of: () => keys }, jtis);
  });
  const nowSeconds = () => Math.floor(clock.now() / 1000);

  it("takes strings as they are, numbers as text, claims as JSON text, a resource array as a spaced list, and sets client_id", async () => {
    const claims = { userinfo: { email: { essential: true } } };
    const params = await objects.open(app, await sign({ state: "s", max_age: 300, claims, resource: ["https://a.example/", "https://b.example/"], jti: "j", exp: nowSeconds() + 60 }));
    assert.deepEqual(Object.fromEntries(params), {
      state: "s", max_age: "300", claims: JSON.stringify(claims), resource: "https://a.example/ https://b.example/", client_id: app.clientId,
    });
  });

  it("refuses a value no query could carry, and a client without keys", async () => {
    await assert.rejects(objects.open(app, await sign({ resource: ["has space"] })), refused);
    await assert.rejects(objects.open(app, await sign({ prompt: null })), refused);
    const keyless = new RequestObjects(ISSUER, clock, { of: () => undefined }, jtis);
    await assert.rejects(keyless.open(app, await sign({ state: "s" })), refused);
  });

  describe("its jti, used once", () => {
    it("refuses a second use of one jti by the same client, and keeps the jti until the object's exp", async () => {
      const exp = nowSeconds() + 90;
      const object = await sign({ state: "s", jti: "once", exp });
      await objects.open(app, object);
      await assert.rejects(objects.open(app, object), (err) => refused(err) && /used before/.test((err as OAuthError).description));
      await assert.rejects(objects.open(app, await sign({ state: "other", jti: "once", exp })), refused, "a new object with a spent jti");
      assert.deepEqual([...jtis.rows.values()], [exp * 1000]);
    });

    it("keys the jti by client: another client's object may carry the same jti", async () => {
      const other = { ...app, clientId: "client-b" } as ApplicationRecord;
      const signAs = (clientId: string) => sign({ iss: clientId, jti: "shared", exp: nowSeconds() + 60 });
      await objects.open(app, await signAs(app.clientId));
      await objects.open(other, await signAs(other.clientId));
      assert.equal(jtis.rows.size, 2);
    });

    it("keeps the jti of an object without exp, or with a far one, for the bounded time", async () => {
      const bound = clock.now() + REQUEST_OBJECT_JTI_MAX_KEEP_SECONDS * 1000;
      await objects.open(app, await sign({ jti: "no-exp" }));
      await objects.open(app, await sign({ jti: "far-exp", exp: nowSeconds() + 10 * 365 * 24 * 3600 }));
      await objects.open(app, await sign({ jti: "huge-exp", exp: 1e20 }));
      assert.deepEqual([...jtis.rows.values()], [bound, bound, bound]);
    });

    it("spends nothing for a refused object or one without jti, and refuses a jti that is no usable string", async () => {
      await assert.rejects(objects.open(app, await sign({ jti: "refused", prompt: null })), refused);
      await objects.open(app, await sign({ state: "no-jti" }));
      assert.equal(jtis.rows.size, 0);
      for (const jti of [42, "", "x".repeat(257), ["a"]]) await assert.rejects(objects.open(app, await sign({ jti })), refused, JSON.stringify(jti));
      await objects.open(app, await sign({ jti: "refused" }));
    });
  });
});
