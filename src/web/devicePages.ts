import { escapeHtml, layout } from "./pages.js";

/** The /device page's forms carry this browser's CSRF token (double submit, csrf.ts). */
const csrfField = (csrfToken: string) => `<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">`;

export interface DeviceCodeView {
  csrfToken: string;
  userCode: string;
  /** Not signed in: the form asks for a user name and password too. */
  signIn: boolean;
  error?: string;
}

/** RFC 8628 §3.3: the user types the code the device shows (filled in from verification_uri_complete). */
export function deviceCodePage(view: DeviceCodeView): string {
  const error = view.error ? `<p class="error" id="device-error" role="alert">${escapeHtml(view.error)}</p>\n` : "";
  const describedBy = view.error ? ` aria-describedby="device-error"` : "";
  const focusCode = view.userCode && view.signIn ? "" : " autofocus";
  const signIn = view.signIn
    ? `<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required${view.userCode ? " autofocus" : ""}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
`
    : "";
  return layout(
    "Connect a device",
    `<h1>Connect a device</h1>
<p class="subtitle">Enter the code your device shows${view.signIn ? ", then sign in" : ""}.</p>
${error}<form method="post" action="/device" class="login">
${csrfField(view.csrfToken)}<input type="hidden" name="step" value="code">
<label for="user_code">Code</label>
<input id="user_code" name="user_code" type="text" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required placeholder="XXXX-XXXX" value="${escapeHtml(view.userCode)}"${focusCode}${describedBy}>
${signIn}<button type="submit" class="primary">Continue</button>
</form>`,
  );
}

export interface DeviceConsentView {
  csrfToken: string;
  userCode: string;
  appName: string;
  scopes: readonly string[];
  userName: string;
}

/** The application and scopes the device asks for, and the user's choice. */
export function deviceConsentPage(view: DeviceConsentView): string {
  const scopes = view.scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join("");
  return layout(
    `Allow ${view.appName}?`,
    `<h1>Allow <strong>${escapeHtml(view.appName)}</strong>?</h1>
<p class="subtitle">A device showing the code <strong>${escapeHtml(view.userCode)}</strong> asks to act as <strong>${escapeHtml(view.userName)}</strong> with:</p>
<ul class="scopes">${scopes}</ul>
<form method="post" action="/device" class="login">
${csrfField(view.csrfToken)}<input type="hidden" name="step" value="decide"><input type="hidden" name="user_code" value="${escapeHtml(view.userCode)}">
<button type="submit" class="primary" name="decision" value="allow" autofocus>Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}

/** After the decision: the device goes on by itself. */
export function deviceDonePage(allowed: boolean): string {
  return allowed
    ? layout("Device connected", `<h1>Device connected</h1>\n<p class="subtitle">You may return to your device: it continues by itself. You can close this page.</p>`)
    : layout("Request denied", `<h1>Request denied</h1>\n<p class="subtitle">The device was not given access. You can close this page.</p>`);
}
