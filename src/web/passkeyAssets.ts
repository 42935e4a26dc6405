import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** @simplewebauthn/browser's own browser bundle, served from our origin under the pages' CSP (`script-src 'self'`). */
export const WEBAUTHN_SCRIPT_PATH = "/login/assets/webauthn.js";
/** Our script that drives the passkey forms with it. */
export const PASSKEY_SCRIPT_PATH = "/login/assets/passkey.js";

/** The library's UMD bundle (it defines `SimpleWebAuthnBrowser`), read once from the installed package. */
export function webauthnBundle(): Buffer {
  const entry = createRequire(import.meta.url).resolve("@simplewebauthn/browser");
  // The package's main is script/index.js; its browser bundle sits beside, in dist/bundle.
  return readFileSync(join(dirname(dirname(entry)), "dist", "bundle", "index.umd.min.js"));
}

/** The script tags of a page with passkey forms: the library first, then ours. */
export const PASSKEY_SCRIPTS = `<script src="${WEBAUTHN_SCRIPT_PATH}"></script>\n<script src="${PASSKEY_SCRIPT_PATH}"></script>`;

/**
 * Every `form[data-passkey]` of a page: shown only where the browser can use
 * passkeys; on submit it fetches the ceremony's options from its
 * `data-options` path (posting the form's fields, CSRF token included),
 * runs the ceremony, puts the answer in the form's `response` field and
 * submits the form. A failure is shown in the form's alert.
 */
export const PASSKEY_SCRIPT = `"use strict";
(function () {
  var lib = window.SimpleWebAuthnBrowser;
  if (!lib || !lib.browserSupportsWebAuthn()) return;
  document.querySelectorAll("form[data-passkey]").forEach(function (form) {
    form.hidden = false;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      run(form);
    });
  });
  async function run(form) {
    var button = form.querySelector("button[type=submit]");
    var alert = form.querySelector("[data-passkey-error]");
    var response = form.querySelector("input[name=response]");
    button.disabled = true;
    alert.hidden = true;
    try {
      response.value = "";
      var res = await fetch(form.dataset.options, { method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin" });
      if (!res.ok) throw new Error("no options");
      var optionsJSON = await res.json();
      var result = form.dataset.passkey === "register"
        ? await lib.startRegistration({ optionsJSON: optionsJSON })
        : await lib.startAuthentication({ optionsJSON: optionsJSON });
      response.value = JSON.stringify(result);
      form.submit();
    } catch (err) {
      alert.textContent = "The passkey was not used. Try again" + (form.dataset.passkey === "register" ? "." : ", or use another way to sign in.");
      alert.hidden = false;
      button.disabled = false;
      button.focus();
    }
  }
})();
`;
