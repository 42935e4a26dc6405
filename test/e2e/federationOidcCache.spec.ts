import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { newSigningKey, OIDC_CLIENT, OIDC_CODE, startFakeOidc, type FakeOidc, type SigningKey } from "../support/fakeOidc.js";
import { startTestServer, TEST_APP } from "../support/server.js";

/** How long an OIDC provider's discovery document and JWKS are used (providerTypes/oidc.ts). */
const CACHE_SECONDS = 3600;

/**
 * The cached JWKS (and discovery document) of an OIDC provider expire on the
 * server's injected clock: within the hour no request goes to the provider
 * for them; after it, a key the provider withdrew stops verifying.
 */
describe("an OIDC provider's cached JWKS, on the injected clock", () => {
  const clock = new FakeClock();
  let fake: FakeOidc;
  let server: RunningServer;

  before(async () => {
    fake = await startFakeOidc();
    server = await startTestServer({
      clock,
      config: {
        applications: [{ ...TEST_APP, providers: ["oidc"] }],
        providers: [{ name: "oidc", type: "OIDC", displayName: "Acme OIDC", ...OIDC_CLIENT, issuer: fake.origin }],
      },
    });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });

  /** One sign-in through the provider, its ID token signed with `key` (else its first published key); our /callback/oidc status and text. */
  async function roundTrip(key?: SigningKey): Promise<{ status: number; text: string }> {
    fake.reset();
    if (key) fake.plan.key = key;
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(server.url, { scope: "openid" }), jar);
    const res = await submit(`${server.url}/login/oauth/provider/oidc`, loginFormFields(await page.text()), jar);
    assert.equal(res.status, 303);
    const authUrl = new URL(res.headers.get("location")!);
    fake.nonce = authUrl.searchParams.get("nonce") ?? undefined;
    const state = authUrl.searchParams.get("state")!;
    const callback = await browse(`${server.url}/callback/oidc?${new URLSearchParams({ code: OIDC_CODE, state, iss: fake.origin })}`, jar);
    return { status: callback.status, text: (await callback.text()).replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c))) };
  }
  const reads = (path: string) => fake.requests.filter((r) => r.path === path).length;

  it("uses the JWKS it read for an hour, then reads it again: a withdrawn key verifies until then, and not after", async () => {
    const withdrawn = fake.published[0]!;
    assert.equal((await roundTrip()).status, 303);
    assert.equal(reads("/jwks"), 1, "the first sign-in reads the JWKS");

    // The provider withdraws the key, yet an ID token signed with it comes back while the set read is fresh.
    fake.published = [await newSigningKey()];
    clock.advanceSeconds(CACHE_SECONDS - 1);
    const fresh = await roundTrip(withdrawn);
    assert.equal(fresh.status, 303, fresh.text);
    assert.equal(reads("/jwks") + reads("/.well-known/openid-configuration"), 0, "nothing is read again within the hour");

    clock.advanceSeconds(1);
    const stale = await roundTrip(withdrawn);
    assert.ok(stale.status >= 400, `status ${stale.status}`);
    assert.match(stale.text, /ID token is signed with a key the provider's JWKS does not have/);
    assert.equal(reads("/jwks"), 1, "the JWKS is read again once the hour is over");
    assert.equal(reads("/.well-known/openid-configuration"), 1, "and so is the discovery document");

    const current = await roundTrip();
    assert.equal(current.status, 303, current.text);
    assert.equal(reads("/jwks"), 0, "the set read a moment ago is used");
  });
});
