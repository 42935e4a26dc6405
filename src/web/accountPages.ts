import { escapeHtml, layout } from "./pages.js";

/** One of the user's factors as the page lists it. */
export interface FactorRow {
  id: string;
  type: "totp" | "passkey";
  name: string;
  createdAt: number;
}

export interface SessionRow {
  id: string;
  createdAt: number;
  current: boolean;
}

export interface LinkRow {
  provider: string;
  externalIdType: string;
  externalId: string;
  username: string;
}

/** What the account page shows. */
export interface AccountView {
  csrfToken: string;
  userName: string;
  displayName: string;
  hasPassword: boolean;
  passwordMinLength: number;
  factors: readonly FactorRow[];
  recoveryCodesLeft: number;
  sessions: readonly SessionRow[];
  links: readonly LinkRow[];
  /** A sentence saying what the last action did. */
  notice?: string;
  /** The password form's errors, by field. */
  passwordErrors?: Partial<Record<"current" | "password" | "passwordAgain", string>>;
  /** An error about the rest of the page. */
  error?: string;
}

/** The one hidden field every form posts: this browser's CSRF token (double submit, web/csrf.ts). */
const csrf = (token: string, extra: Record<string, string> = {}) =>
  Object.entries({ csrf_token: token, ...extra })
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join("");

const when = (ms: number) => escapeHtml(new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC");

/** A one-button form: the action is named by its visible label, and by `label` for assistive technology. */
function actionButton(action: string, token: string, fields: Record<string, string>, text: string, label: string): string {
  return `<form method="post" action="${action}" class="inline">${csrf(token, fields)}<button type="submit" class="secondary" aria-label="${escapeHtml(label)}">${escapeHtml(text)}</button></form>`;
}

function passwordSection(view: AccountView): string {
  if (!view.hasPassword) return `<section aria-labelledby="password-h"><h2 id="password-h">Password</h2><p>This account has no password: you sign in through a provider.</p></section>`;
  const errors = view.passwordErrors ?? {};
  const field = (id: string, name: string, label: string, autocomplete: string, error?: string) =>
    `<label for="${id}">${label}</label>
<input id="${id}" name="${name}" type="password" autocomplete="${autocomplete}" required${error ? ` aria-invalid="true" aria-describedby="${id}-error"` : ""}>
${error ? `<p class="field-error" id="${id}-error" role="alert">${escapeHtml(error)}</p>` : ""}`;
  return `<section aria-labelledby="password-h"><h2 id="password-h">Password</h2>
<form method="post" action="/account/password" class="login">${csrf(view.csrfToken)}
${field("current-password", "current_password", "Current password", "current-password", errors.current)}
${field("new-password", "password", `New password (at least ${view.passwordMinLength} characters)`, "new-password", errors.password)}
${field("new-password-again", "password_again", "New password again", "new-password", errors.passwordAgain)}
<button type="submit" class="primary">Change password</button>
</form>
<p class="hint">Your other sessions and the applications' refresh tokens end; this browser stays signed in.</p></section>`;
}

function factorsSection(view: AccountView): string {
  const totp = view.factors.filter((f) => f.type === "totp");
  const rows = view.factors
    .map((f) => `<li><span>${escapeHtml(f.name)} <span class="muted">(${f.type === "totp" ? "one-time code" : "passkey"}, added ${when(f.createdAt)})</span></span>
${actionButton("/account/factor/remove", view.csrfToken, { factor: f.id }, "Remove", `Remove ${f.name}`)}</li>`)
    .join("\n");
  const recovery = view.factors.length
    ? `<p id="recovery-left">Recovery codes left: <strong>${view.recoveryCodesLeft}</strong></p>
${actionButton("/account/recovery", view.csrfToken, {}, "Make new recovery codes", "Make new recovery codes (the old ones stop working)")}`
    : "";
  return `<section aria-labelledby="factors-h"><h2 id="factors-h">Two-step verification</h2>
${rows ? `<ul class="items" id="factors">\n${rows}\n</ul>` : `<p>No second factor yet.</p>`}
${totp.length ? "" : actionButton("/account/totp", view.csrfToken, {}, "Set up a one-time code", "Set up a one-time code from an authenticator app")}
${recovery}
<p><a href="/account/passkeys">Passkeys</a></p></section>`;
}

function sessionsSection(view: AccountView): string {
  const rows = view.sessions
    .map((s) => `<li${s.current ? ` class="current"` : ""}><span>Signed in ${when(s.createdAt)}${s.current ? ` <strong>(this browser)</strong>` : ""}</span>
${s.current ? "" : actionButton("/account/sessions/end", view.csrfToken, { session: s.id }, "End", `End the session signed in ${when(s.createdAt)}`)}</li>`)
    .join("\n");
  return `<section aria-labelledby="sessions-h"><h2 id="sessions-h">Sessions</h2>
<ul class="items" id="sessions">\n${rows}\n</ul>
<p><a href="/api/logout">Sign out of this browser</a></p></section>`;
}

function linksSection(view: AccountView): string {
  const rows = view.links
    .map((l) => `<li><span>${escapeHtml(l.provider)} <span class="muted">${escapeHtml(l.username || l.externalId)}</span></span>
${actionButton("/account/links/unlink", view.csrfToken, { provider: l.provider, id_type: l.externalIdType, external_id: l.externalId }, "Unlink", `Unlink ${l.provider}`)}</li>`)
    .join("\n");
  return `<section aria-labelledby="links-h"><h2 id="links-h">Linked providers</h2>
${rows ? `<ul class="items" id="links">\n${rows}\n</ul>` : "<p>None.</p>"}</section>`;
}

/** The account page: password, factors, sessions, linked providers, and links to passkeys and consents. */
export function accountPage(view: AccountView): string {
  const notice = view.notice ? `<p class="notice" role="status">${escapeHtml(view.notice)}</p>\n` : "";
  const error = view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>\n` : "";
  return layout(
    "Your account",
    `<h1>Your account</h1>
<p class="subtitle">Signed in as <strong>${escapeHtml(view.displayName || view.userName)}</strong></p>
${notice}${error}${passwordSection(view)}
${factorsSection(view)}
${sessionsSection(view)}
${linksSection(view)}
<section aria-labelledby="apps-h"><h2 id="apps-h">Applications</h2><p><a href="/account/consents">Applications you allowed</a></p></section>`,
    { cardClass: "wide" },
  );
}

/** Enrolment of a one-time code from the account page: its own step, replaced by the next page once confirmed. */
export function accountEnrolPage(view: { csrfToken: string; factorId: string; uri: string; secret: string; qrDataUrl: string; error?: string }): string {
  const error = view.error ? `<p class="error" id="enrol-error" role="alert">${escapeHtml(view.error)}</p>\n` : "";
  return layout(
    "Set up a one-time code",
    `<h1>Set up a one-time code</h1>
<p class="subtitle">Scan this code with an authenticator app, then type the code it shows.</p>
${error}<img class="qr" src="${escapeHtml(view.qrDataUrl)}" alt="QR code of the setup link below">
<details><summary>Cannot scan? Type the key instead</summary>
<p>Key: <code class="secret" id="totp-secret">${escapeHtml(view.secret)}</code></p>
<p>Link: <code class="secret" id="totp-uri">${escapeHtml(view.uri)}</code></p>
</details>
<form method="post" action="/account/totp/confirm" class="login">${csrf(view.csrfToken, { factor: view.factorId })}
<label for="code">Code from your authenticator app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" required autofocus${view.error ? ` aria-describedby="enrol-error"` : ""}>
<button type="submit" class="primary">Turn on</button>
</form>
<p class="links"><a href="/account">Cancel</a></p>`,
  );
}

/** New recovery codes, shown this once. */
export function accountRecoveryCodesPage(codes: readonly string[]): string {
  return layout(
    "Save your recovery codes",
    `<h1>Save your recovery codes</h1>
<p class="subtitle">Each code signs you in once if you lose your device. Keep them somewhere safe: they are not shown again, and any older codes no longer work.</p>
<ol class="recovery-codes" id="recovery-codes">
${codes.map((c) => `<li>${escapeHtml(c)}</li>`).join("\n")}
</ol>
<p class="links"><a href="/account" autofocus>I saved them, back to my account</a></p>`,
  );
}

/** Asks before the last factor goes from a user who signs in to applications that require one. */
export function removeLastFactorPage(view: { csrfToken: string; factorId: string; factorName: string; applications: readonly string[] }): string {
  return layout(
    "Remove your last second factor?",
    `<h1>Remove your last second factor?</h1>
<p class="subtitle">These applications require two-step verification. Without <strong>${escapeHtml(view.factorName)}</strong>, they will ask you to set up a new factor at your next sign-in, and your recovery codes stop working.</p>
<ul id="required-apps">${view.applications.map((a) => `<li>${escapeHtml(a)}</li>`).join("")}</ul>
<form method="post" action="/account/factor/remove" class="login">${csrf(view.csrfToken, { factor: view.factorId, confirm: "yes" })}
<button type="submit" class="primary">Remove it</button>
</form>
<p class="links"><a href="/account" autofocus>Keep it</a></p>`,
  );
}
