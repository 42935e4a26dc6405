import assert from "node:assert/strict";
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from "jose";
import { OAuthError } from "../../src/oauth/errors.js";
import { RequestObjects } from "../../src/oauth/requestObject.js";
import type { ApplicationRecord } from "../../src/shared/model.js";
import { FakeClock } from "../support/clock.js";

describe("request objects (RFC 9101): claims to authorize parameters", () => {
  const ISSUER = "https://id.example";
  const app = { clientId: "client-a", jwks: "{}", jwksUri: "" } as ApplicationRecord;
  const clock = new FakeClock();
  let objects: RequestObjects;
  let sign: (claims: Record<string, unknown>) => Promise<string>;

  before(async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), alg: "ES256" }] });
    objects = new RequestObjects(ISSUER, clock, { of: () => keys });
    sign = (claims) => new SignJWT({ iss: app.clientId, aud: ISSUER, ...claims }).setProtectedHeader({ alg: "ES256" }).sign(privateKey);
  });

  it("takes strings as they are, numbers as text, claims as JSON text, a resource array as a spaced list, and sets client_id", async () => {
    const claims = { userinfo: { email: { essential: true } } };
    const params = await objects.open(app, await sign({ state: "s", max_age: 300, claims, resource: ["https://a.example/", "https://b.example/"], jti: "j", exp: Math.floor(clock.now() / 1000) + 60 }));
    assert.deepEqual(Object.fromEntries(params), {
      state: "s", max_age: "300", claims: JSON.stringify(claims), resource: "https://a.example/ https://b.example/", client_id: app.clientId,
    });
  });

  it("refuses a value no query could carry, and a client without keys", async () => {
    const refused = (err: unknown) => err instanceof OAuthError && err.code === "invalid_request_object";
    await assert.rejects(objects.open(app, await sign({ resource: ["has space"] })), refused);
    await assert.rejects(objects.open(app, await sign({ prompt: null })), refused);
    const keyless = new RequestObjects(ISSUER, clock, { of: () => undefined });
    await assert.rejects(keyless.open(app, await sign({ state: "s" })), refused);
  });
});
