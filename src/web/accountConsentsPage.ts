import { escapeHtml, layout } from "./pages.js";

/** One application the user allowed, in the page's words. */
export interface AllowedApplication {
  clientId: string;
  name: string;
  /** Each scope: its description (or "") and its name. */
  scopes: { name: string; description: string }[];
  resources: { uri: string; name: string }[];
  /** Epoch ms. */
  grantedAt: number;
}

export interface AccountConsentsView {
  userName: string;
  csrfToken: string;
  applications: AllowedApplication[];
  /** What the last revocation did, said once. */
  status?: string;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function applicationItem(app: AllowedApplication, csrfToken: string, index: number): string {
  const name = escapeHtml(app.name);
  const heading = `consent-${index}`;
  const scopes = app.scopes.map((s) => `<li>${s.description ? `${escapeHtml(s.description)} ` : ""}<code>${escapeHtml(s.name)}</code></li>`).join("\n");
  const resources = app.resources.length
    ? `<p>Only at:</p>\n<ul aria-label="Where ${name} may use it">\n${app.resources
        .map((r) => `<li>${r.name ? `${escapeHtml(r.name)} ` : ""}<code>${escapeHtml(r.uri)}</code></li>`)
        .join("\n")}\n</ul>\n`
    : "";
  return `<li aria-labelledby="${heading}">
<h2 id="${heading}">${name}</h2>
<p class="subtitle">Allowed on <time datetime="${new Date(app.grantedAt).toISOString()}">${day(app.grantedAt)}</time></p>
<ul aria-label="What ${name} may do">
${scopes}
</ul>
${resources}<form method="post" action="/account/consents" class="login">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">
<input type="hidden" name="client_id" value="${escapeHtml(app.clientId)}">
<button type="submit" aria-label="Revoke ${name}">Revoke</button>
</form>
</li>`;
}

/**
 * The applications a signed-in user allowed (issue 43 §2), each with a
 * Revoke button in a form of its own: no script, every control a labelled
 * button, one column that fits a phone.
 */
export function accountConsentsPage(view: AccountConsentsView): string {
  const status = view.status ? `<p class="ok" role="status">${escapeHtml(view.status)}</p>\n` : "";
  const list = view.applications.length
    ? `<ul class="consents">\n${view.applications.map((a, i) => applicationItem(a, view.csrfToken, i)).join("\n")}\n</ul>`
    : `<p>You have not allowed any application yet.</p>`;
  return layout(
    "Applications you allowed",
    `<h1>Applications you allowed</h1>
<p class="subtitle">Signed in as <strong>${escapeHtml(view.userName)}</strong>. Revoking one ends its access at once; it must ask you again.</p>
${status}${list}`,
  );
}

/** Not signed in: this page is behind the browser's sign-in. */
export function accountSignInNeededPage(accountPath: string): string {
  return layout(
    "Sign in",
    `<h1>Sign in first</h1>
<p class="subtitle">The applications you allowed are shown to you once you are signed in.</p>
<p><a href="${escapeHtml(accountPath)}">Go to your account</a></p>`,
  );
}
