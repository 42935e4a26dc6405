import { escapeHtml, layout } from "./pages.js";

/** One labelled input with its own error under it (issue 47 §2: each field with a label and its own error). */
function field(name: string, label: string, type: string, autocomplete: string, value: string, error: string | undefined, focus: boolean): string {
  const errorId = `${name}-error`;
  const invalid = error ? ` aria-invalid="true" aria-describedby="${errorId}"` : "";
  return (
    `<label for="${name}">${escapeHtml(label)}</label>\n` +
    `<input id="${name}" name="${name}" type="${type}" autocomplete="${autocomplete}" required value="${escapeHtml(value)}"${invalid}${focus ? " autofocus" : ""}>\n` +
    (error ? `<p class="field-error" id="${errorId}" role="alert">${escapeHtml(error)}</p>\n` : "")
  );
}

const hidden = (fields: Record<string, string | undefined>) =>
  Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value!)}">`)
    .join("");

export interface SignUpView {
  appName: string;
  requestId: string;
  csrfToken: string;
  username?: string;
  email?: string;
  errors?: Partial<Record<"username" | "email" | "password" | "passwordAgain", string>>;
  passwordMinLength: number;
}

export function signUpPage(view: SignUpView): string {
  const errors = view.errors ?? {};
  // Focus goes to the first field in error, else the first field.
  const first = (["username", "email", "password", "passwordAgain"] as const).find((f) => errors[f]) ?? "username";
  const fields = [
    field("username", "Username", "text", "username", view.username ?? "", errors.username, first === "username"),
    field("email", "Email", "email", "email", view.email ?? "", errors.email, first === "email"),
    field("password", `Password (at least ${view.passwordMinLength} characters)`, "password", "new-password", "", errors.password, first === "password"),
    field("password_again", "Password again", "password", "new-password", "", errors.passwordAgain, first === "passwordAgain"),
  ].join("");
  return layout(
    `Create an account for ${view.appName}`,
    `<h1>Create account</h1>
<p class="subtitle">to continue to <strong>${escapeHtml(view.appName)}</strong></p>
<form method="post" action="/signup" class="login" novalidate>
${hidden({ request: view.requestId, csrf_token: view.csrfToken })}
${fields}<button type="submit" class="primary">Create account</button>
</form>`,
  );
}

export function checkMailPage(what: "signup" | "reset"): string {
  const message =
    what === "signup"
      ? "We sent a mail to the address you gave. Follow its link to verify your email, then sign in. No mail? Check your spam folder, or sign up again in a while."
      : "If an account matches what you typed, we sent a link to its email address. It works once, for a limited time. No mail? Check your spam folder, or ask again in a while.";
  return layout("Check your email", `<h1>Check your email</h1>\n<p class="subtitle" role="status">${escapeHtml(message)}</p>`);
}

export function forgotPage(view: { csrfToken: string; requestId?: string }): string {
  return layout(
    "Forgot password",
    `<h1>Forgot password?</h1>
<p class="subtitle">Type your user name or email; we mail you a link to choose a new password.</p>
<form method="post" action="/login/forgot" class="login">
${hidden({ request: view.requestId, csrf_token: view.csrfToken })}
${field("identifier", "User name or email", "text", "username", "", undefined, true)}<button type="submit" class="primary">Send link</button>
</form>`,
  );
}

export interface ResetView {
  token: string;
  csrfToken: string;
  userName: string;
  errors?: Partial<Record<"password" | "passwordAgain", string>>;
  passwordMinLength: number;
}

export function resetPage(view: ResetView): string {
  const errors = view.errors ?? {};
  const againFirst = !errors.password && !!errors.passwordAgain;
  const fields = [
    field("password", `New password (at least ${view.passwordMinLength} characters)`, "password", "new-password", "", errors.password, !againFirst),
    field("password_again", "New password again", "password", "new-password", "", errors.passwordAgain, againFirst),
  ].join("");
  return layout(
    "Choose a new password",
    `<h1>Choose a new password</h1>
<p class="subtitle">for <strong>${escapeHtml(view.userName)}</strong>. Every session of this account will be signed out.</p>
<form method="post" action="/password/reset" class="login" novalidate>
${hidden({ token: view.token, csrf_token: view.csrfToken })}
${fields}<button type="submit" class="primary">Set password</button>
</form>`,
  );
}

/** The verification link's page: a button, so a mail scanner fetching the link spends nothing. */
export function verifyPage(view: { token: string; csrfToken: string }): string {
  return layout(
    "Verify your email",
    `<h1>Verify your email</h1>
<p class="subtitle">Confirm that this address is yours.</p>
<form method="post" action="/email/verify" class="login">
${hidden({ token: view.token, csrf_token: view.csrfToken })}
<button type="submit" class="primary" autofocus>Verify email</button>
</form>`,
  );
}

/** A page that only tells: a link that does nothing, an address verified, a password changed. */
export function noticePage(title: string, message: string, error = false): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p class="${error ? "error" : "subtitle"}" role="${error ? "alert" : "status"}">${escapeHtml(message)}</p>`);
}
