import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT, jwtVerify, type JWK } from "jose";
import { KEY_SET_REREAD_MS, KEY_SET_TTL_MS, RemoteKeySets } from "../../src/federation/remoteKeySets.js";
import { UpstreamError } from "../../src/federation/upstream.js";
import { FakeClock } from "../support/clock.js";
import { T0 } from "../support/storeFixtures.js";

async function key(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: "ES256" };
  const sign = () => new SignJWT({ sub: "s" }).setProtectedHeader({ alg: "ES256", kid }).sign(privateKey);
  return { jwk, sign };
}

describe("remote JWK Sets (a client's jwksUri, a trusted issuer's keys)", () => {
  it("reads a set once, keeps it, re-reads on an unknown kid at most once per 30 s, and after its lifetime", async () => {
    const clock = new FakeClock(T0);
    const [first, second] = [await key("k1"), await key("k2")];
    let published: JWK[] = [first.jwk];
    const calls: { url: string; publicOnly?: boolean }[] = [];
    const upstream = {
      clock,
      requestJson: async (_step: string, url: string, init: { publicOnly?: boolean }) => {
        calls.push({ url, publicOnly: init.publicOnly });
        return { keys: published };
      },
    };
    const sets = new RemoteKeySets(upstream as never);
    const url = "https://keys.example/jwks";
    const verify = async (jwt: string) => jwtVerify(jwt, sets.resolver(url));

    await Promise.all([verify(await first.sign()), verify(await first.sign())]);
    assert.deepEqual(calls, [{ url, publicOnly: true }], "one read for concurrent checks, public addresses only");

    published = [first.jwk, second.jwk];
    clock.advanceSeconds(KEY_SET_REREAD_MS / 1000);
    await verify(await second.sign());
    assert.equal(calls.length, 2, "an unknown kid reads the set again");

    const stranger = await key("k3");
    await assert.rejects(verify(await stranger.sign()));
    await assert.rejects(verify(await stranger.sign()));
    assert.equal(calls.length, 2, "within 30 s of the last read, unknown kids read nothing");

    clock.advanceSeconds(KEY_SET_TTL_MS / 1000);
    await verify(await first.sign());
    assert.equal(calls.length, 3, "a set is read again after its lifetime");
  });

  it("does not call a URL whose read failed again within 30 s", async () => {
    const clock = new FakeClock(T0);
    let calls = 0;
    const sets = new RemoteKeySets({ clock, requestJson: async () => (calls++, Promise.reject(new UpstreamError("jwks", "answered HTTP 500"))) } as never);
    const jwt = await (await key("k")).sign();
    const url = "https://keys.example/jwks";
    for (let i = 0; i < 3; i++) await assert.rejects(jwtVerify(jwt, sets.resolver(url)), UpstreamError);
    assert.equal(calls, 1);
    clock.advanceSeconds(KEY_SET_REREAD_MS / 1000);
    await assert.rejects(jwtVerify(jwt, sets.resolver(url)), UpstreamError);
    assert.equal(calls, 2);
  });

  it("refuses a URL that is not https before any call", async () => {
    let called = false;
    const sets = new RemoteKeySets({ clock: new FakeClock(T0), requestJson: async () => ((called = true), { keys: [] }) } as never);
    const jwt = await (await key("k")).sign();
    await assert.rejects(jwtVerify(jwt, sets.resolver("http://keys.example/jwks")), UpstreamError);
    assert.equal(called, false);
  });
});
