import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer } from "smtp-server";

/** A message the test SMTP server accepted, parsed by mailparser. */
export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  parsed: ParsedMail;
}

/**
 * A real SMTP server in the test process (smtp-server), on 127.0.0.1 and a
 * random port, requiring AUTH with `user` / `password`. Messages are parsed
 * with mailparser. `refuse` makes it answer DATA with a temporary failure.
 */
export class TestSmtpServer {
  readonly received: ReceivedMail[] = [];
  /** Set to refuse every message with 451 (a temporary failure). */
  refuse = false;
  /** How many DATA commands arrived, refused ones included. */
  attempts = 0;
  readonly user = "mailer";
  readonly password = "smtp-pass-never-logged-7Q";
  private readonly waiters: Array<() => void> = [];
  private server!: SMTPServer;
  port = 0;

  get url(): string {
    return `smtp://${this.user}:${this.password}@127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = new SMTPServer({
      // No TLS here: nodemailer sends in clear to a loopback host, as the service allows.
      hideSTARTTLS: true,
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, callback) =>
        auth.username === this.user && auth.password === this.password ? callback(null, { user: auth.username }) : callback(new Error("Invalid username or password")),
      onData: (stream, session, callback) => {
        this.attempts++;
        simpleParser(stream).then(
          (parsed) => {
            if (this.refuse) {
              const err = Object.assign(new Error("try again later"), { responseCode: 451 });
              return callback(err);
            }
            this.received.push({
              to: session.envelope.rcptTo.map((r) => r.address).join(","),
              subject: parsed.subject ?? "",
              text: parsed.text ?? "",
              html: typeof parsed.html === "string" ? parsed.html : "",
              parsed,
            });
            callback();
            for (const wake of this.waiters.splice(0)) wake();
          },
          (err: Error) => callback(err),
        );
      },
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** The first message to `to` (after `after` messages) whose subject matches, waiting up to `timeoutMs`. */
  async waitFor(to: string, subject: RegExp, timeoutMs = 30_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find((m) => m.to === to && subject.test(m.subject));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} matching ${subject} within ${timeoutMs} ms; got ${JSON.stringify(this.received.map((m) => [m.to, m.subject]))}`);
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  /** Messages to `to`. */
  to(to: string): ReceivedMail[] {
    return this.received.filter((m) => m.to === to);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The one link in a mail's text part that starts with `prefix`. */
export function linkIn(mail: ReceivedMail, prefix: string): string {
  const links = (mail.text.match(/https?:\/\/\S+/g) ?? []).filter((l) => l.startsWith(prefix));
  if (links.length !== 1) throw new Error(`expected one link starting ${prefix} in: ${mail.text}`);
  return links[0]!;
}
