/**
 * The mails of self-service accounts, each as a plain-text part and a simple
 * HTML part. Every link is built from the configured issuer by the caller,
 * never from a request's Host header.
 */

export interface MailContent {
  subject: string;
  text: string;
  html: string;
}

const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function compose(subject: string, paragraphs: string[], link?: { url: string; label: string }): MailContent {
  const text = [...paragraphs, ...(link ? [`${link.label}: ${link.url}`] : [])].join("\n\n") + "\n";
  const body = paragraphs.map((p) => `<p>${escape(p)}</p>`);
  if (link) body.splice(1, 0, `<p><a href="${escape(link.url)}">${escape(link.label)}</a></p>`);
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${escape(subject)}</title></head><body>${body.join("")}</body></html>`;
  return { subject, text, html };
}

const validFor = (ttlSeconds: number) =>
  ttlSeconds >= 3600 && ttlSeconds % 3600 === 0
    ? `${ttlSeconds / 3600} hour${ttlSeconds === 3600 ? "" : "s"}`
    : ttlSeconds >= 60 && ttlSeconds % 60 === 0
      ? `${ttlSeconds / 60} minute${ttlSeconds === 60 ? "" : "s"}`
      : `${ttlSeconds} second${ttlSeconds === 1 ? "" : "s"}`;

export function verifyEmailMail(name: string, url: string, ttlSeconds: number): MailContent {
  return compose(
    "Verify your email address",
    [
      `Hello ${name}, please confirm that this is your email address.`,
      `The link works once, for ${validFor(ttlSeconds)}. If you did not ask for this, ignore this mail.`,
    ],
    { url, label: "Verify email address" },
  );
}

export function passwordResetMail(name: string, url: string, ttlSeconds: number): MailContent {
  return compose(
    "Reset your password",
    [
      `Hello ${name}, someone asked to reset the password of your account. If it was you, choose a new password.`,
      `The link works once, for ${validFor(ttlSeconds)}, and a newer request replaces it. If you did not ask for this, ignore this mail: your password stays as it is.`,
    ],
    { url, label: "Choose a new password" },
  );
}

export function passwordChangedMail(name: string, via: "reset" | "account" = "reset"): MailContent {
  const how = via === "reset" ? "through a reset link, and every session was signed out" : "on its account page, and every other session was signed out";
  return compose("Your password was changed", [
    `Hello ${name}, the password of your account was just changed ${how}.`,
    "If this was not you, reset your password again at once and tell your administrator.",
  ]);
}

export function signupAttemptMail(resetUrl: string): MailContent {
  return compose(
    "Someone tried to create an account with your email address",
    [
      "Someone tried to create a new account with this email address, which already belongs to an account. No new account was made.",
      "If it was you, sign in with your existing account, or reset its password. If not, you can ignore this mail.",
    ],
    { url: resetUrl, label: "Reset your password" },
  );
}
