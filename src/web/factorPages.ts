import { escapeHtml, layout, passkeyButton } from "./pages.js";
import { PASSKEY_SCRIPTS } from "./passkeyAssets.js";

/** What every form of the factor step posts: the pending request and the CSRF token. */
export interface FactorForm {
  requestId: string;
  csrfToken: string;
  appName: string;
  error?: string;
  /** Offer the user's passkeys too (web/factorStep.ts). */
  passkeys?: boolean;
}

const hidden = (form: FactorForm, extra: Record<string, string> = {}) =>
  Object.entries({ request: form.requestId, csrf_token: form.csrfToken, ...extra })
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join("");

const errorLine = (form: FactorForm) => (form.error ? `<p class="error" id="factor-error" role="alert">${escapeHtml(form.error)}</p>\n` : "");
const describedBy = (form: FactorForm) => (form.error ? ` aria-describedby="factor-error"` : "");

/** The second step of a sign-in: a one-time code or a recovery code. */
export function factorPage(form: FactorForm): string {
  return layout(
    "Two-step verification",
    `<h1>Two-step verification</h1>
<p class="subtitle">to continue to <strong>${escapeHtml(form.appName)}</strong></p>
${errorLine(form)}<form method="post" action="/login/factor" class="login">
${hidden(form)}
<label for="code">Code from your authenticator app, or a recovery code</label>
<input id="code" name="code" type="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required autofocus${describedBy(form)}>
<button type="submit" class="primary">Verify</button>
</form>
${form.passkeys ? passkeyButton(hidden(form), "/login/factor/passkey", "Use a passkey") : ""}`,
    { scripts: form.passkeys ? PASSKEY_SCRIPTS : "" },
  );
}

/** Where the enrolment page's passkey form posts (web/factorStep.ts); its options come from `${path}/options`. */
export const ENROL_PASSKEY_PATH = "/login/factor/enrol/passkey";

/**
 * Enrolment of a one-time code: the QR code, the URI and secret as text, and
 * the first code; or, where `passkeys`, a passkey instead.
 */
export function enrolPage(form: FactorForm & { factorId: string; uri: string; secret: string; qrDataUrl: string }): string {
  return layout(
    "Set up two-step verification",
    `<h1>Set up two-step verification</h1>
<p class="subtitle"><strong>${escapeHtml(form.appName)}</strong> asks for a second step at sign-in. Scan this code with an authenticator app, then type the code it shows.</p>
${errorLine(form)}<img class="qr" src="${escapeHtml(form.qrDataUrl)}" alt="QR code of the setup link below">
<details><summary>Cannot scan? Type the key instead</summary>
<p>Key: <code class="secret" id="totp-secret">${escapeHtml(form.secret)}</code></p>
<p>Link: <code class="secret" id="totp-uri">${escapeHtml(form.uri)}</code></p>
</details>
<form method="post" action="/login/factor/enrol" class="login">
${hidden(form, { factor: form.factorId })}
<label for="code">Code from your authenticator app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" required autofocus${describedBy(form)}>
<button type="submit" class="primary">Turn on</button>
</form>
${form.passkeys ? passkeyButton(hidden(form, { factor: form.factorId }), ENROL_PASSKEY_PATH, "Use a passkey instead", "register") : ""}`,
    { scripts: form.passkeys ? PASSKEY_SCRIPTS : "" },
  );
}

/** The recovery codes, shown this once. */
export function recoveryCodesPage(form: FactorForm & { codes: readonly string[] }): string {
  return layout(
    "Save your recovery codes",
    `<h1>Save your recovery codes</h1>
<p class="subtitle">Each code signs you in once if you lose your device. Keep them somewhere safe: they are not shown again.</p>
<ol class="recovery-codes" id="recovery-codes">
${form.codes.map((c) => `<li>${escapeHtml(c)}</li>`).join("\n")}
</ol>
<form method="post" action="/login/factor/continue" class="login">
${hidden(form)}
<button type="submit" class="primary" autofocus>I saved them, continue</button>
</form>`,
  );
}
