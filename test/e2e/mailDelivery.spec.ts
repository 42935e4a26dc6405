import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { CookieJar } from "../support/browserless.js";
import { askReset } from "../support/selfService.js";
import { RecordingLogger, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { TestSmtpServer } from "../support/smtp.js";

describe("mail delivery against a real SMTP server that refuses (issue 47 §1)", function () {
  this.timeout(120_000);
  let smtp: TestSmtpServer;
  let server: RunningServer;
  const logger = new RecordingLogger();

  before(async () => {
    smtp = await new TestSmtpServer().start();
    smtp.refuse = true;
    server = await startTestServer({
      config: { applications: [TEST_APP], users: [TEST_USER] },
      overrides: { smtpUrl: smtp.url, mailFrom: "no-reply@identity.test" },
      mailPolicy: { attempts: 3, deadlineMs: 60_000, retryDelaysMs: [50, 50], maxQueued: 100 },
      logger,
    });
  });
  after(async () => {
    await server?.close();
    await smtp?.close();
  });

  it("answers the person at once, tries 3 times, then logs an error and audits mail_failed, without the SMTP password", async () => {
    const res = await askReset(server, new CookieJar(), TEST_USER.name);
    assert.equal(res.status, 200, "never a 500 to the person");
    assert.match(await res.text(), /Check your email/);
    await server.domain.selfService.drain();
    assert.equal(smtp.attempts, 3);
    assert.equal(smtp.received.length, 0);
    const errors = logger.lines.filter((l) => l.level === "error" && l.message === "mail not sent");
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.fields?.kind, "password_reset");
    await server.store.auditWriter.flush();
    const { events } = await server.domain.auditEvents({ event: "mail_failed", pageSize: 10 });
    assert.equal(events.length, 1);
    assert.equal(events[0]!.userName, TEST_USER.name);
    assert.ok(!logger.text().includes(smtp.password), "the SMTP password never reaches the log");
    assert.ok(!logger.text().includes("token="), "nor does a link");
  });
});
