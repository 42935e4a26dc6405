import { escapeHtml, layout } from "./pages.js";
import { PASSKEY_SCRIPTS } from "./passkeyAssets.js";

/** The paths of the passkey management page (web/accountPasskeys.ts). */
export const ACCOUNT_PASSKEY_PATHS = {
  list: "/account/passkeys",
  options: "/account/passkeys/options",
  add: "/account/passkeys/add",
  rename: "/account/passkeys/rename",
  remove: "/account/passkeys/remove",
} as const;

export interface PasskeyItem {
  id: string;
  name: string;
  /** Epoch ms. */
  createdAt: number;
}

export interface PasskeyListView {
  userName: string;
  csrfToken: string;
  passkeys: readonly PasskeyItem[];
  /** False where the issuer is an IP address: browsers refuse passkeys there. */
  enabled: boolean;
  /** What the last action did, or why it failed. */
  status?: string;
  error?: string;
}

const csrfField = (token: string) => `<input type="hidden" name="csrf_token" value="${escapeHtml(token)}">`;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function passkeyItem(p: PasskeyItem, csrfToken: string, index: number): string {
  const name = escapeHtml(p.name);
  return `<li>
<strong>${name}</strong>
<p class="meta">Added <time datetime="${new Date(p.createdAt).toISOString()}">${day(p.createdAt)}</time></p>
<form method="post" action="${ACCOUNT_PASSKEY_PATHS.rename}">
${csrfField(csrfToken)}<input type="hidden" name="factor" value="${escapeHtml(p.id)}">
<label for="name-${index}">New name for ${name}</label>
<input id="name-${index}" name="name" type="text" maxlength="100" required value="${name}">
<button type="submit" class="secondary">Rename</button>
</form>
<form method="post" action="${ACCOUNT_PASSKEY_PATHS.remove}">
${csrfField(csrfToken)}<input type="hidden" name="factor" value="${escapeHtml(p.id)}">
<button type="submit" class="secondary" aria-label="Remove ${name}">Remove</button>
</form>
</li>`;
}

/** The add form: hidden until our script finds the browser able (web/passkeyAssets.ts). */
function addForm(view: PasskeyListView): string {
  if (!view.enabled) {
    return `<p class="status">Passkeys need this service to be reached by a host name, not an IP address (for example <code>http://localhost</code>).</p>`;
  }
  return `<form method="post" action="${ACCOUNT_PASSKEY_PATHS.add}" class="login" data-passkey="register" data-options="${ACCOUNT_PASSKEY_PATHS.options}" hidden>
${csrfField(view.csrfToken)}<input type="hidden" name="response" value="">
<label for="new-name">Name for the new passkey</label>
<input id="new-name" name="name" type="text" maxlength="100" value="Passkey">
<p class="error" role="alert" data-passkey-error hidden></p>
<button type="submit" class="primary">Add a passkey</button>
</form>`;
}

/** /account/passkeys: the user's passkeys (name, date added), renamed or removed one by one, and a new one added. */
export function passkeyListPage(view: PasskeyListView): string {
  const list = view.passkeys.length
    ? `<ul class="passkey-list" id="passkeys">\n${view.passkeys.map((p, i) => passkeyItem(p, view.csrfToken, i)).join("\n")}\n</ul>`
    : `<p id="passkeys">You have no passkeys yet.</p>`;
  const status = view.status ? `<p class="status" role="status">${escapeHtml(view.status)}</p>\n` : "";
  const error = view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>\n` : "";
  return layout(
    "Passkeys",
    `<h1>Passkeys</h1>
<p class="subtitle">Signed in as <strong>${escapeHtml(view.userName)}</strong>. A passkey signs you in with your device's screen lock, without a password.</p>
${status}${error}${list}
${addForm(view)}
<p class="links"><a href="/account">Back to your account</a></p>`,
    { scripts: view.enabled ? PASSKEY_SCRIPTS : "" },
  );
}

/** Asks before a passkey goes. */
export function removePasskeyPage(view: { csrfToken: string; passkey: PasskeyItem }): string {
  const name = escapeHtml(view.passkey.name);
  return layout(
    "Remove passkey",
    `<h1>Remove ${name}?</h1>
<p class="subtitle">You will no longer be able to sign in with it.</p>
<form method="post" action="${ACCOUNT_PASSKEY_PATHS.remove}" class="login">
${csrfField(view.csrfToken)}<input type="hidden" name="factor" value="${escapeHtml(view.passkey.id)}"><input type="hidden" name="confirm" value="yes">
<button type="submit" class="primary" autofocus>Remove passkey</button>
</form>
<p class="links"><a href="${ACCOUNT_PASSKEY_PATHS.list}">Keep it</a></p>`,
  );
}

/** The recovery codes that came with the user's first factor, shown this once. */
export function passkeyRecoveryCodesPage(codes: readonly string[]): string {
  return layout(
    "Save your recovery codes",
    `<h1>Save your recovery codes</h1>
<p class="subtitle">Your passkey is added. Each code signs you in once if you lose your devices. Keep them somewhere safe: they are not shown again.</p>
<ol class="recovery-codes" id="recovery-codes">
${codes.map((c) => `<li>${escapeHtml(c)}</li>`).join("\n")}
</ol>
<p class="links"><a href="${ACCOUNT_PASSKEY_PATHS.list}">I saved them, continue</a></p>`,
  );
}
