import { escapeHtml, layout as layoutPage } from "./pages.js";

/** What the consent page shows (issue 43 §2): the application, and each scope and resource in plain words. */
export interface ConsentView {
  appName: string;
  /** The registered logo_uri and client_uri, when given (https only, checked at registration). */
  logoUri?: string;
  clientUri?: string;
  /** A client named by its metadata document's URL: that URL, the one thing about it this service checked. */
  documentUrl?: string;
  /** One line per scope: its description, or its name. */
  scopes: { name: string; description: string }[];
  resources: { uri: string; name: string }[];
  requestId: string;
  csrfToken: string;
}

/**
 * The consent page: two buttons in one form, Allow and Deny, which work
 * without script and by keyboard. It is served like the login page (its
 * CSP and anti-framing headers, web/http.ts).
 */
export function consentPage(view: ConsentView): string {
  const app = escapeHtml(view.appName);
  const logo = view.logoUri ? `<img class="app-logo" src="${escapeHtml(view.logoUri)}" alt="">\n` : "";
  const site = view.clientUri ? `<p class="subtitle"><a href="${escapeHtml(view.clientUri)}" rel="noopener noreferrer">${escapeHtml(view.clientUri)}</a></p>\n` : "";
  // Client ID Metadata Document draft: the name is the client's own claim; the URL's host was checked by fetching it.
  const document = view.documentUrl ? `<p class="subtitle">Client ID: <code>${escapeHtml(view.documentUrl)}</code></p>\n` : "";
  const scopes = view.scopes.map((s) => `<li>${escapeHtml(s.description || s.name)} <code>${escapeHtml(s.name)}</code></li>`).join("\n");
  const resources = view.resources.length
    ? `<h2 id="resources">Where it may use this access</h2>\n<ul aria-labelledby="resources">\n${view.resources
        .map((r) => `<li>${escapeHtml(r.name)} <code>${escapeHtml(r.uri)}</code></li>`)
        .join("\n")}\n</ul>\n`
    : "";
  return layoutPage(
    `Allow ${view.appName}?`,
    `${logo}<h1>Allow ${app}?</h1>
${site}${document}<p><strong>${app}</strong> is not run by this sign-in service. It asks to:</p>
<ul aria-label="What it asks for">
${scopes}
</ul>
${resources}<form method="post" action="/login/oauth/consent" class="login">
<input type="hidden" name="request" value="${escapeHtml(view.requestId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<button type="submit" name="decision" value="allow" class="primary">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}
