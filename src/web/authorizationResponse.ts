import type { ServerResponse } from "node:http";
import { responseLocation, type AuthorizationResponse } from "../oauth/authorize.js";
import { redirect, sendPage } from "./http.js";
import { escapeHtml, STYLESHEET_PATH } from "./pages.js";

/** The script that submits the form_post page's form: served from our origin, so the CSP needs no inline script. */
export const FORM_POST_SCRIPT_PATH = "/login/assets/form-post.js";
export const FORM_POST_SCRIPT = `"use strict";
document.getElementById("form-post").submit();
`;

/**
 * Send an authorization response (or error) to the client: a 303 to the
 * redirect_uri with the parameters in its query or fragment, or for
 * `response_mode=form_post` (OAuth 2.0 Form Post Response Mode §2) a page
 * whose form POSTs them there. The form submits itself by the script above,
 * or by its button when script is off.
 */
export function sendAuthorizationResponse(res: ServerResponse, response: AuthorizationResponse, cookies: string[] = []): void {
  if (response.responseMode !== "form_post") return redirect(res, responseLocation(response), cookies);
  sendPage(res, 200, formPostPage(response), cookies, { ownScripts: true });
}

export function formPostPage(response: AuthorizationResponse): string {
  const fields = Object.entries(response.params)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Continue to the application</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main class="card">
<form id="form-post" method="post" action="${escapeHtml(response.redirectUri)}" class="login">
${fields}
<p class="subtitle">Sending you back to the application.</p>
<button type="submit" class="primary">Continue</button>
</form>
</main>
<script src="${FORM_POST_SCRIPT_PATH}"></script>
</body>
</html>
`;
}
