import { isIP } from "node:net";
import nodemailer from "nodemailer";
import type { AuditTrail } from "../shared/audit.js";
import type { Logger } from "../shared/log.js";

/** What a mail is about, for the log and the audit trail (never its link). */
export type MailKind = "verify_email" | "password_reset" | "password_changed" | "signup_attempt";

/** One mail to send: a plain-text part and a simple HTML part. */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  kind: MailKind;
  /** The account it concerns, for the audit trail of a failure. */
  user?: { id: string; name: string };
}

/** One attempt to hand a mail to the SMTP server; rejects on any failure. */
export type SendAttempt = (mail: { from: string; to: string; subject: string; text: string; html: string }, timeoutMs: number) => Promise<void>;

/** How hard a mail is tried: at most `attempts` within `deadlineMs` of being queued, waiting `retryDelaysMs` between them. */
export interface MailPolicy {
  attempts: number;
  deadlineMs: number;
  retryDelaysMs: readonly number[];
  /** Mails waiting or in flight; more are refused (and audited), so a flood cannot fill memory. */
  maxQueued: number;
}

export const DEFAULT_MAIL_POLICY: MailPolicy = { attempts: 3, deadlineMs: 60_000, retryDelaysMs: [2_000, 10_000], maxQueued: 1000 };

/**
 * Parses `smtp://user:pass@host:port` or `smtps://…` into nodemailer's
 * options. The password is a secret: no error here quotes the URL. Plain
 * smtp:// to a host other than loopback must upgrade with STARTTLS
 * (`requireTLS`), so credentials and links never cross a network in clear.
 */
export function smtpOptions(url: string) {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error("must be a URL such as smtps://user:password@smtp.example.com:465 (not shown: it may hold a password)");
  }
  if (parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") throw new Error("must start with smtp:// or smtps://");
  if (!parsed.hostname) throw new Error("must name a host");
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  const secure = parsed.protocol === "smtps:";
  const loopback = host === "localhost" || (isIP(host) !== 0 && /^(127\.|::1$)/.test(host));
  return {
    host,
    port: parsed.port ? Number(parsed.port) : secure ? 465 : 587,
    secure,
    requireTLS: !secure && !loopback,
    auth: parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : undefined,
  };
}

/** One attempt through nodemailer, every stage of the SMTP exchange bounded by `timeoutMs`. */
export function smtpSender(url: string): SendAttempt {
  const options = smtpOptions(url);
  return async (mail, timeoutMs) => {
    const transport = nodemailer.createTransport({
      ...options,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
      dnsTimeout: timeoutMs,
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        transport.sendMail(mail),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("the SMTP server did not answer in time")), timeoutMs))),
      ]);
    } finally {
      clearTimeout(timer);
      transport.close();
    }
  };
}

/**
 * The outbox: mails are sent off the request's path, each tried at most
 * `policy.attempts` times within `policy.deadlineMs`. A final failure is
 * logged at error level and audited as `mail_failed`; the person who asked
 * has had their answer already and never sees it as a 500.
 *
 * It lives in memory, not in the database: a mail carries its link's token
 * in clear, which the database holds only as a hash. A mail lost with the
 * process is asked for again (sign-up's and reset's pages say so), and a
 * clean shutdown waits for the queue (drain).
 */
export class MailQueue {
  private readonly inFlight = new Set<Promise<boolean>>();

  constructor(
    private readonly send: SendAttempt,
    private readonly from: string,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
    private readonly policy: MailPolicy = DEFAULT_MAIL_POLICY,
  ) {}

  /** Queue a mail; resolves true once delivered, false once given up. Never rejects. */
  enqueue(mail: OutgoingMail): Promise<boolean> {
    if (this.inFlight.size >= this.policy.maxQueued) {
      this.failed(mail, 0, "the outbox is full");
      return Promise.resolve(false);
    }
    const delivery = this.deliver(mail).finally(() => this.inFlight.delete(delivery));
    this.inFlight.add(delivery);
    return delivery;
  }

  /** Resolves once every queued mail is delivered or given up. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private async deliver(mail: OutgoingMail): Promise<boolean> {
    const deadline = Date.now() + this.policy.deadlineMs;
    let lastError = "";
    for (let attempt = 1; attempt <= this.policy.attempts; attempt++) {
      const left = deadline - Date.now();
      if (left <= 0) return this.failed(mail, attempt - 1, lastError || "no time left");
      try {
        await this.send({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html }, left);
        return true;
      } catch (err) {
        lastError = (err as Error).message;
        this.logger.warn("mail not sent yet; will try again", { kind: mail.kind, attempt, error: lastError });
      }
      const pause = this.policy.retryDelaysMs[attempt - 1] ?? 0;
      if (attempt < this.policy.attempts && Date.now() + pause < deadline) await new Promise((wake) => setTimeout(wake, pause));
      else if (attempt < this.policy.attempts) return this.failed(mail, attempt, lastError);
    }
    return this.failed(mail, this.policy.attempts, lastError);
  }

  private failed(mail: OutgoingMail, attempts: number, error: string): false {
    this.logger.error("mail not sent", { kind: mail.kind, attempts, error, userName: mail.user?.name });
    this.audit.record({
      event: "mail_failed",
      outcome: "failure",
      actor: mail.user ? { kind: "user", id: mail.user.id, name: mail.user.name } : { kind: "admin", id: "local", name: "local" },
      userId: mail.user?.id ?? null,
      userName: mail.user?.name ?? null,
      details: { kind: mail.kind, attempts, error: error.slice(0, 200) },
    });
    return false;
  }
}
