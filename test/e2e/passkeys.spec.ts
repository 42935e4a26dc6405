import assert from "node:assert/strict";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { redeem } from "../support/factors.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { SoftAuthenticator } from "../support/softAuthenticator.js";

/**
 * Passkey sign-in over plain HTTP (issue #46 §2), with a software
 * authenticator: the login page's headers and form, the ceremony's options,
 * a sign-in to a code, and the attacks a browser would not make: the same
 * answer posted again (a replay), and junk.
 */
describe("passkey sign-in over HTTP", function () {
  this.timeout(60_000);
  let server: RunningServer;
  let authenticator: SoftAuthenticator;

  before(async () => {
    server = await startTestServer({ overrides: { host: "localhost" } });
    authenticator = new SoftAuthenticator({ origin: server.issuer });
    const alice = (await server.store.users.findByName(TEST_USER.name))!;
    const options = await server.domain.passkeys.registrationOptions(alice, "test-session");
    assert.ok(await server.domain.passkeys.register(alice, JSON.stringify(authenticator.register(options)), "Soft key", "test-session"));
  });
  after(() => server?.close());

  /** A browser at the login page: its cookies and the form's hidden fields. */
  async function atLoginPage() {
    const jar = new CookieJar();
    const res = await browse(authorizeUrl(server.issuer), jar);
    return { jar, res, html: await res.text() };
  }

  async function passkeyAnswer(jar: CookieJar, fields: Record<string, string>): Promise<string> {
    const res = await submit(`${server.issuer}/login/passkey/options`, fields, jar);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const options = (await res.json()) as PublicKeyCredentialRequestOptionsJSON;
    // No credentials named: the browser offers the discoverable ones it has (WebAuthn §5.4.4).
    assert.deepEqual([options.rpId, options.userVerification, options.allowCredentials ?? []], ["localhost", "required", []]);
    return JSON.stringify(authenticator.assert(options, "localhost"));
  }

  it("offers the passkey form under a CSP that allows our own scripts and requests, nothing inline", async () => {
    const { res, html } = await atLoginPage();
    const csp = res.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'; script-src 'self'; connect-src 'self';/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(html, /data-passkey="authenticate" data-options="\/login\/passkey\/options"/);
    for (const path of ["/login/assets/webauthn.js", "/login/assets/passkey.js"]) {
      const asset = await fetch(`${server.issuer}${path}`);
      assert.deepEqual([asset.status, asset.headers.get("content-type")], [200, "text/javascript; charset=utf-8"]);
    }
  });

  it("signs in with a passkey and no user name to a code whose ID token says acr mfa, amr hwk user mfa", async () => {
    const { jar, html } = await atLoginPage();
    const fields = loginFormFields(html);
    const res = await submit(`${server.issuer}/login/passkey`, { ...fields, response: await passkeyAnswer(jar, fields) }, jar);
    assert.equal(res.status, 303);
    const { idToken } = await redeem(server, new URL(res.headers.get("location")!), TEST_APP);
    assert.deepEqual([idToken.acr, idToken.amr], ["mfa", ["hwk", "user", "mfa"]]);
  });

  it("attack: a replayed assertion, posted again on another sign-in, signs nobody in", async () => {
    const first = await atLoginPage();
    const firstFields = loginFormFields(first.html);
    const answer = await passkeyAnswer(first.jar, firstFields);
    assert.equal((await submit(`${server.issuer}/login/passkey`, { ...firstFields, response: answer }, first.jar)).status, 303);
    // The same answer on a new sign-in of the same browser (signed in now: prompt=login), and on one of another browser.
    const again = { jar: first.jar, html: await (await browse(authorizeUrl(server.issuer, { prompt: "login" }), first.jar)).text() };
    for (const { jar, html } of [again, await atLoginPage()]) {
      const fields = loginFormFields(html);
      const res = await submit(`${server.issuer}/login/passkey`, { ...fields, response: answer }, jar);
      assert.equal(res.status, 400);
      assert.match(await res.text(), /That passkey could not sign you in/);
    }
  });

  it("answers junk with the login form again (400), never a server error", async () => {
    const { jar, html } = await atLoginPage();
    const fields = loginFormFields(html);
    for (const response of ["", "{", "[1]", JSON.stringify({ id: "x", rawId: "x", type: "public-key", response: { clientDataJSON: "e30" } }), "x".repeat(60_000)]) {
      const res = await submit(`${server.issuer}/login/passkey`, { ...fields, response }, jar);
      assert.ok([400, 413].includes(res.status), `status ${res.status}`);
    }
    // Options only for this browser's own pending sign-in.
    assert.equal((await submit(`${server.issuer}/login/passkey/options`, { ...fields, csrf_token: "y".repeat(43) }, jar)).status, 403);
  });
});
