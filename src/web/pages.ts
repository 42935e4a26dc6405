import { PASSKEY_SCRIPTS } from "./passkeyAssets.js";

/** Escape text for HTML element content and double-quoted attributes. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export const STYLESHEET_PATH = "/login/assets/login.css";

/** A page of the sign-in service: one card (`cardClass` beside it), our stylesheet, and no script but `scripts` (tags of our own, web/passkeyAssets.ts). */
export function layout(title: string, body: string, options: { cardClass?: string; scripts?: string } = {}): string {
  const { cardClass = "", scripts = "" } = options;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main class="card${cardClass ? ` ${cardClass}` : ""}">
${body}
</main>
${scripts ? `${scripts}\n` : ""}</body>
</html>
`;
}

/** A provider button on the login page. */
export interface ProviderButton {
  name: string;
  label: string;
  favicon: string;
}

export interface LoginView {
  appName: string;
  /** The pending authorize request the form completes. */
  requestId: string;
  csrfToken: string;
  providers: readonly ProviderButton[];
  /** Prefilled after a failed attempt. */
  username?: string;
  error?: string;
  /** Self-service pages this login page links to, when offered (web/selfService.ts). */
  links?: { forgot?: string; signup?: string };
  /** Offer "Sign in with a passkey" (the issuer is a host name, web/passkeySignIn.ts). */
  passkeys?: boolean;
}

/** Hidden fields every form of the login page posts: the pending request and the CSRF token. */
function pendingFields(view: LoginView): string {
  return (
    `<input type="hidden" name="request" value="${escapeHtml(view.requestId)}">` +
    `<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">`
  );
}

export function loginPage(view: LoginView): string {
  const app = escapeHtml(view.appName);
  const error = view.error
    ? `<p class="error" id="login-error" role="alert">${escapeHtml(view.error)}</p>\n`
    : "";
  const describedBy = view.error ? ` aria-describedby="login-error"` : "";
  // Focus goes where the user types next: the password after a failed attempt.
  const focusUser = view.username ? "" : " autofocus";
  const focusPassword = view.username ? " autofocus" : "";
  // Each favicon has alt="" and no width or height attributes, only a maximum size in the
  // stylesheet: a favicon that fails to load then takes no room and shows no broken-image
  // box, and the button shows the provider's name alone, with no script (the CSP allows none).
  const providers = view.providers.length
    ? `<div class="divider"><span>or</span></div>
<ul class="providers">
${view.providers
  .map(
    (p) => `<li><form method="post" action="/login/oauth/provider/${encodeURIComponent(p.name)}">${pendingFields(view)}
<button type="submit" class="provider"><img src="${escapeHtml(p.favicon)}" alt=""> Sign in with ${escapeHtml(p.label)}</button>
</form></li>`,
  )
  .join("\n")}
</ul>
`
    : "";
  return layout(
    `Sign in to ${view.appName}`,
    `<h1>Sign in</h1>
<p class="subtitle">to continue to <strong>${app}</strong></p>
${error}<form method="post" action="/login" class="login">
${pendingFields(view)}
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${escapeHtml(view.username ?? "")}"${focusUser}${describedBy}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${focusPassword}${describedBy}>
<button type="submit" class="primary">Sign in</button>
</form>
${selfServiceLinks(view.links)}${view.passkeys ? passkeyButton(pendingFields(view), "/login/passkey", "Sign in with a passkey") : ""}${providers}`,
    { scripts: view.passkeys ? PASSKEY_SCRIPTS : "" },
  );
}

/**
 * A passkey form (web/passkeyAssets.ts drives it): hidden until the script
 * finds the browser able, so a browser without script or WebAuthn never
 * shows a button that cannot work.
 */
export function passkeyButton(fields: string, action: string, label: string, ceremony: "authenticate" | "register" = "authenticate"): string {
  return `<form method="post" action="${action}" class="login" data-passkey="${ceremony}" data-options="${action}/options" hidden>
<div class="divider"><span>or</span></div>
${fields}<input type="hidden" name="response" value="">
<p class="error" role="alert" data-passkey-error hidden></p>
<button type="submit" class="secondary">${escapeHtml(label)}</button>
</form>
`;
}

function selfServiceLinks(links: LoginView["links"]): string {
  const shown = [
    ...(links?.forgot ? [`<a href="${escapeHtml(links.forgot)}">Forgot password?</a>`] : []),
    ...(links?.signup ? [`<a href="${escapeHtml(links.signup)}">Create account</a>`] : []),
  ];
  return shown.length ? `<p class="links">${shown.join("")}</p>\n` : "";
}

/** What the sign-out confirmation carries through to its POST (RP-Initiated Logout 1.0 §2). */
export interface SignOutView {
  csrfToken: string;
  postLogoutRedirectUri: string;
  state: string;
  clientId: string;
}

/** Asks the user whether to sign out: a sign-out without an ID token hint may come from any page. */
export function signOutPage(view: SignOutView): string {
  const carried: Array<[string, string]> = [
    ["csrf_token", view.csrfToken],
    ["client_id", view.clientId],
    ["post_logout_redirect_uri", view.postLogoutRedirectUri],
    ["state", view.state],
  ];
  const hidden = carried
    .filter(([, value]) => value !== "")
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join("");
  return layout(
    "Sign out",
    `<h1>Sign out?</h1>
<p class="subtitle">You will be signed out of this sign-in service; applications that rely on it will ask you to sign in again.</p>
<form method="post" action="/api/logout" class="login">
${hidden}
<button type="submit" class="primary" autofocus>Sign out</button>
</form>`,
  );
}

export function signedOutPage(): string {
  return layout("Signed out", `<h1>You have signed out</h1>\n<p class="subtitle">You can close this page.</p>`);
}

export function errorPage(title: string, message: string, code?: string): string {
  return layout(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
${code ? `<p class="code">Error code: <code>${escapeHtml(code)}</code></p>\n` : ""}<p>Go back to the application and try again.</p>`,
  );
}
