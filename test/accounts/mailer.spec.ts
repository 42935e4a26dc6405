import assert from "node:assert/strict";
import { parseServeConfig } from "../../src/app/config.js";
import { MailQueue, smtpOptions, type SendAttempt } from "../../src/accounts/mailer.js";
import type { AuditRecord } from "../../src/shared/audit.js";
import { RecordingLogger } from "../support/server.js";

const MAIL = { to: "a@example.com", subject: "s", text: "t", html: "<p>t</p>", kind: "verify_email" as const, user: { id: "u1", name: "alice" } };

function queue(send: SendAttempt, policy = { attempts: 3, deadlineMs: 60_000, retryDelaysMs: [10, 10], maxQueued: 1000 }) {
  const logger = new RecordingLogger();
  const audited: AuditRecord[] = [];
  return { logger, audited, mail: new MailQueue(send, "Identity <no-reply@example.com>", logger, { record: (e) => audited.push(e) }, policy) };
}

describe("mail outbox (issue 47 §1)", () => {
  it("tries a failing mail 3 times, then logs it at error level and audits mail_failed", async () => {
    let attempts = 0;
    const { logger, audited, mail } = queue(async () => {
      attempts++;
      throw new Error("451 try again later");
    });
    assert.equal(await mail.enqueue(MAIL), false);
    assert.equal(attempts, 3);
    assert.deepEqual(logger.lines.filter((l) => l.level === "error").map((l) => l.message), ["mail not sent"]);
    assert.equal(audited.length, 1);
    assert.equal(audited[0]!.event, "mail_failed");
    assert.deepEqual(audited[0]!.details, { kind: "verify_email", attempts: 3, error: "451 try again later" });
  });

  it("gives up at the deadline: a server that never answers costs no more than the minute", async () => {
    const timeouts: number[] = [];
    const { audited, mail } = queue(
      (_m, timeoutMs) => {
        timeouts.push(timeoutMs);
        return new Promise((_, reject) => setTimeout(() => reject(new Error("timed out")), timeoutMs));
      },
      { attempts: 3, deadlineMs: 300, retryDelaysMs: [1000, 1000], maxQueued: 10 },
    );
    const started = Date.now();
    assert.equal(await mail.enqueue(MAIL), false);
    assert.ok(Date.now() - started < 5_000);
    assert.equal(timeouts.length, 1, "no retry fits after a 300 ms attempt with a 1 s pause");
    assert.ok(timeouts[0]! <= 300);
    assert.equal(audited[0]!.event, "mail_failed");
  });

  it("delivers on a later attempt, and drain waits for it", async () => {
    let attempts = 0;
    const { audited, mail } = queue(async () => {
      if (++attempts < 2) throw new Error("421 busy");
    });
    const delivered = mail.enqueue(MAIL);
    await mail.drain();
    assert.equal(await delivered, true);
    assert.equal(audited.length, 0);
  });

  it("refuses beyond its queue, audited, instead of growing without bound", async () => {
    const { audited, mail } = queue(() => new Promise(() => {}), { attempts: 1, deadlineMs: 60_000, retryDelaysMs: [], maxQueued: 2 });
    void mail.enqueue(MAIL);
    void mail.enqueue(MAIL);
    assert.equal(await mail.enqueue(MAIL), false);
    assert.equal(audited[0]!.event, "mail_failed");
  });
});

describe("--smtp-url (issue 47 §1)", () => {
  const secret = "p%40ss-w0rd-secret";

  it("reads credentials, port and TLS from the URL; plain smtp beyond loopback must upgrade with STARTTLS", () => {
    assert.deepEqual(smtpOptions(`smtps://user:${secret}@smtp.example.com`), {
      host: "smtp.example.com", port: 465, secure: true, requireTLS: false, auth: { user: "user", pass: "p@ss-w0rd-secret" },
    });
    assert.equal(smtpOptions("smtp://smtp.example.com:587").requireTLS, true);
    assert.equal(smtpOptions("smtp://127.0.0.1:2525").requireTLS, false);
    assert.equal(smtpOptions("smtp://[::1]:2525").host, "::1");
  });

  it("never quotes the URL, which may hold a password, in an error", () => {
    for (const bad of [`http://user:${secret}@smtp.example.com`, `smtp//user:${secret}@x`]) {
      assert.throws(
        () => parseServeConfig(["--smtp-url", bad], {}),
        (err: Error) => err.message.startsWith("--smtp-url / IDENTITY_SMTP_URL:") && !err.message.includes(secret) && !err.message.includes("p@ss"),
      );
    }
  });

  it("goes with --mail-from", () => {
    const config = parseServeConfig(["--smtp-url", "smtp://127.0.0.1:25", "--mail-from", "Identity <no-reply@example.com>"], {});
    assert.equal(config.mailFrom, "Identity <no-reply@example.com>");
    assert.throws(() => parseServeConfig(["--mail-from", "no address"], {}), /--mail-from/);
  });
});
