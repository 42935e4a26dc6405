import assert from "node:assert/strict";
import { loginPage } from "../../src/web/pages.js";
import { enrolPage, factorPage } from "../../src/web/factorPages.js";
import { passkeyListPage, removePasskeyPage } from "../../src/web/passkeyPages.js";
import { PASSKEY_SCRIPT_PATH, WEBAUTHN_SCRIPT_PATH, webauthnBundle } from "../../src/web/passkeyAssets.js";

const HOSTILE = `"><script>alert(1)</script><img src=x onerror=alert(2)>`;
/** Every script tag of a page: ours, by src, never inline. */
const scripts = (html: string) => [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)].map(([, attrs, body]) => ({ attrs: attrs!, body: body! }));

const ENROLMENT = { appName: "App", requestId: "r", csrfToken: "t", factorId: "f1", uri: "otpauth://totp/x", secret: "ABC", qrDataUrl: "data:image/png;base64,AA" };

describe("the passkey pages", () => {
  it("load only our two scripts by src, and no inline script, style or handler", () => {
    const pages = [
      loginPage({ appName: "App", requestId: "r", csrfToken: "t", providers: [], passkeys: true }),
      factorPage({ appName: "App", requestId: "r", csrfToken: "t", passkeys: true }),
      passkeyListPage({ userName: "alice", csrfToken: "t", passkeys: [{ id: "f1", name: "Laptop", createdAt: 0 }], enabled: true }),
      enrolPage({ ...ENROLMENT, passkeys: true }),
    ];
    for (const html of pages) {
      assert.deepEqual(scripts(html).map((s) => [s.attrs.trim(), s.body]), [[`src="${WEBAUTHN_SCRIPT_PATH}"`, ""], [`src="${PASSKEY_SCRIPT_PATH}"`, ""]]);
      assert.doesNotMatch(html, /style=|<style| on\w+=/i);
      // Hidden until the script finds the browser able.
      assert.match(html, /<form [^>]*data-passkey="(authenticate|register)"[^>]*hidden>/);
    }
    assert.deepEqual(scripts(loginPage({ appName: "App", requestId: "r", csrfToken: "t", providers: [] })), [], "no passkeys: no script");
    assert.deepEqual(scripts(enrolPage(ENROLMENT)), [], "no passkeys: no script");
  });

  it("offer a passkey instead of a one-time code at enrolment, posting the pending sign-in's fields and no user name", () => {
    const html = enrolPage({ ...ENROLMENT, passkeys: true });
    const form = /<form [^>]*data-passkey="register"[^>]*>([\s\S]*?)<\/form>/.exec(html);
    assert.match(form?.[0] ?? "", /action="\/login\/factor\/enrol\/passkey" class="login" data-passkey="register" data-options="\/login\/factor\/enrol\/passkey\/options"/);
    assert.deepEqual([...(form?.[1] ?? "").matchAll(/<input type="hidden" name="([^"]+)"/g)].map((m) => m[1]), ["request", "csrf_token", "factor", "response"]);
    assert.match(form?.[1] ?? "", />Use a passkey instead<\/button>/);
  });

  it("escape a passkey's name everywhere it is shown", () => {
    const view = { userName: HOSTILE, csrfToken: HOSTILE, passkeys: [{ id: HOSTILE, name: HOSTILE, createdAt: 0 }], enabled: true, error: HOSTILE, status: HOSTILE };
    for (const html of [passkeyListPage(view), removePasskeyPage({ csrfToken: HOSTILE, passkey: view.passkeys[0]! })]) {
      assert.doesNotMatch(html, /<script>|<img src=x/);
    }
  });

  it("label every control, and say why no passkey can be added at an IP address", () => {
    const html = passkeyListPage({ userName: "alice", csrfToken: "t", passkeys: [{ id: "f1", name: "Laptop", createdAt: Date.UTC(2026, 0, 2) }], enabled: true });
    for (const [, id] of html.matchAll(/<input id="([^"]+)"/g)) assert.match(html, new RegExp(`<label for="${id}">`));
    assert.match(html, /aria-label="Remove Laptop"/);
    assert.match(html, /<time datetime="2026-01-02T00:00:00.000Z">2026-01-02<\/time>/);
    const off = passkeyListPage({ userName: "alice", csrfToken: "t", passkeys: [], enabled: false });
    assert.match(off, /host name, not an IP address/);
    assert.doesNotMatch(off, /data-passkey|<script/);
  });

  it("serve @simplewebauthn/browser's own bundle", () => {
    assert.match(webauthnBundle().toString("utf8"), /SimpleWebAuthnBrowser/);
  });
});
