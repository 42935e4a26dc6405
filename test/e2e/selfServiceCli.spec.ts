import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanEnv, ensureBuilt, runCli } from "../support/cli.js";
import { linkIn, TestSmtpServer } from "../support/smtp.js";

/** Run the built CLI to its end; its exit code, standard output and standard error. */
async function identity(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = runCli(args, cleanEnv());
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

describe("identity user verify-email and app --signup (issue 47 §2, §4)", function () {
  this.timeout(180_000);
  let smtp: TestSmtpServer;
  const database = join(mkdtempSync(join(tmpdir(), "identity-cli-mail-")), "db.sqlite");

  before(async () => {
    ensureBuilt();
    smtp = await new TestSmtpServer().start();
  });
  after(() => smtp?.close());

  it("mails a verification link made from --issuer through --smtp-url, and waits for delivery", async () => {
    const created = await identity(["user", "create", "--name", "bob", "--email", "bob@example.com", "--database", database]);
    assert.equal(created.code, 0, created.stderr);
    const sent = await identity([
      "user", "verify-email", "--name", "bob", "--database", database,
      "--issuer", "https://id.example.test", "--smtp-url", smtp.url, "--mail-from", "Identity <no-reply@example.test>",
    ]);
    assert.equal(sent.code, 0, sent.stderr);
    assert.deepEqual(JSON.parse(sent.stdout), { mailed: "bob" });
    const mail = await smtp.waitFor("bob@example.com", /Verify your email/);
    assert.ok(linkIn(mail, "https://id.example.test/email/verify?token="));
    assert.ok(!sent.stderr.includes(smtp.password));
  });

  it("fails, without quoting the SMTP password, when the mail cannot be delivered or mail is not configured", async () => {
    const refused = await identity([
      "user", "verify-email", "--name", "bob", "--database", database,
      "--issuer", "https://id.example.test", "--smtp-url", `smtp://${smtp.user}:wrong-${smtp.password}@127.0.0.1:${smtp.port}`, "--mail-from", "no-reply@example.test",
    ]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /could not be delivered/);
    assert.ok(!refused.stderr.includes(smtp.password) && !refused.stdout.includes(smtp.password));
    const unconfigured = await identity(["user", "verify-email", "--name", "bob", "--database", database, "--issuer", "https://id.example.test"]);
    assert.notEqual(unconfigured.code, 0);
    assert.match(unconfigured.stderr, /--smtp-url and --mail-from/);
  });

  it("turns sign-up on and off for an application", async () => {
    const created = await identity(["app", "create", "--name", "shop", "--redirect-uri", "https://shop.example/cb", "--signup", "--database", database]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).signup, true);
    const off = await identity(["app", "update", "--name", "shop", "--no-signup", "--database", database]);
    assert.equal(JSON.parse(off.stdout).signup, undefined);
  });
});
