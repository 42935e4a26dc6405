import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import { consoleClientFor } from "../../src/accounts/consoleClient.js";
import { ADMIN_SCOPE } from "../../src/oauth/scopes.js";
import type { RunningServer } from "../../src/app/server.js";
import { cleanEnv, ensureBuilt, hasScript, runCli, runCliInTerminal, type CliProcess } from "../support/cli.js";
import { consoleSignIn } from "../support/consoleSignIn.js";

/** A log line as pino-pretty writes it: `[12:00:00.000] INFO (pid): message`. */
const PRETTY_LINE = /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) \((\d+)\): /m;
/** The end of the first start's lines: the demo's curl command. */
const CURL_LINE = /^\s*curl .*\n/m;

const freshDatabase = () => join(mkdtempSync(join(tmpdir(), "identity-first-start-")), "identity.sqlite");

/** The console's sign-in, as its page makes it, against a server known only by its URL. */
async function consoleTokens(url: string, issuer: string, user: { name: string; password: string }) {
  const server = { url, domain: { console: consoleClientFor(issuer) } } as unknown as RunningServer;
  return consoleSignIn(server, user);
}

async function listUsersAs(url: string, accessToken: string) {
  const users = createClient(UserAdminService, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
  return (await users.listUsers({}, { headers: { authorization: `Bearer ${accessToken}` } })).users;
}

async function stop(cli: CliProcess, pid: number): Promise<void> {
  process.kill(pid, "SIGTERM");
  assert.equal(await cli.exited, 0, "SIGTERM stops it cleanly");
}

/**
 * Issue 48 §2: a newcomer who runs `npm start` in a terminal reaches the
 * console at once: the first start also makes an administrator and prints
 * its password once. Where standard output is not a terminal (a container,
 * a service manager, whose output a log collector keeps) no administrator is
 * made; the start prints the command that makes one instead. The terminal
 * case runs the built CLI on a real pseudo-terminal (util-linux `script`).
 */
describe("the first start: an administrator for the console", function () {
  this.timeout(120_000); // covers a rebuild of dist/ when the sources are newer

  before(() => ensureBuilt());
  // A test that failed halfway leaves no server behind (`script` ends the node process it runs).
  const started: CliProcess[] = [];
  const track = (cli: CliProcess) => (started.push(cli), cli);
  afterEach(() => {
    for (const cli of started.splice(0)) if (cli.child.exitCode === null) cli.child.kill("SIGTERM");
  });

  it("on a terminal: creates `admin`, prints its password once with the console's URL, before any log line; logs are human-readable; the password signs in to the admin scope", async function () {
    if (!hasScript()) this.skip();
    const database = freshDatabase();
    const first = track(runCliInTerminal(["serve", "--port", "0", "--database", database], cleanEnv()));
    let pid: number | undefined;
    try {
      const [, url, issuer] = (await first.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+) \(issuer (\S+)\)/))!;
      await first.waitFor(CURL_LINE);
      const admin = (await first.waitFor(/^Admin console: (\S+)\n\s+username:\s+(\S+)\n\s+password:\s+(\S+)$/m))!;
      assert.equal(admin[1], `${issuer}/admin`);
      assert.equal(admin[2], "admin");
      const password = admin[3]!;
      assert.ok(password.length >= 16, password);

      // The log lines the start held (the audit events of the seed, the console's application) follow the start's own lines.
      await first.waitFor(/admin console application created/);
      const text = first.stdout();
      const firstLog = PRETTY_LINE.exec(text);
      assert.ok(firstLog, text);
      pid = Number(firstLog[1]);
      const bannerEnd = CURL_LINE.exec(text)!;
      assert.ok(firstLog.index >= bannerEnd.index + bannerEnd[0].length, `a log line came before the start's own lines:\n${text}`);
      assert.ok(text.indexOf("listening on") < text.indexOf("First start"), text);

      // The printed password opens the console: the admin scope, and an admin RPC with its token.
      const tokens = await consoleTokens(url!, issuer!, { name: "admin", password });
      assert.ok(tokens.scope?.split(" ").includes(ADMIN_SCOPE), tokens.scope);
      const users = await listUsersAs(url!, tokens.access_token);
      assert.deepEqual(users.map((u) => [u.name, u.isAdmin]).sort(), [["admin", true], ["demo", false]]);
      // The demo user is no administrator, and gets no admin scope.
      const demoPassword = /username:\s+demo\n\s+password:\s+(\S+)/.exec(text)![1]!;
      const demo = await consoleTokens(url!, issuer!, { name: "demo", password: demoPassword });
      assert.ok(!demo.scope?.split(" ").includes(ADMIN_SCOPE), demo.scope);

      // Every log line, the requests' included, is pino-pretty's, none JSON.
      await first.waitFor(/UserAdminService\/ListUsers/);
      assert.doesNotMatch(first.stdout(), /^\{"level"/m);
      assert.equal(first.stdout().split(password).length, 2, "the password is printed once, and never logged");
    } finally {
      if (pid) await stop(first, pid);
      else first.child.kill("SIGTERM");
    }

    // A later start on the same database makes no one, and prints nothing secret.
    const later = track(runCliInTerminal(["serve", "--port", "0", "--database", database], cleanEnv()));
    const [, laterUrl] = (await later.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))!;
    // A request's log line names the pid to signal.
    await (await fetch(`${laterUrl}/.well-known/openid-configuration`)).arrayBuffer();
    const line = (await later.waitFor(PRETTY_LINE))!;
    await stop(later, Number(line[1]));
    assert.doesNotMatch(later.stdout(), /First start|Admin console|password|client_secret/);
  });

  it("on a terminal, with JSON asked for: the start's lines still come first, and logs are JSON lines", async function () {
    if (!hasScript()) this.skip();
    const cli = track(runCliInTerminal(["serve", "--port", "0", "--database", freshDatabase()], cleanEnv({ IDENTITY_LOG_PRETTY: "false" })));
    await cli.waitFor(/^Admin console: .*\n\s+username:\s+admin\n/m);
    const [line] = await cli.waitFor(/^\{"level".*"msg":"admin console application created"\}$/m);
    const text = cli.stdout();
    const bannerEnd = CURL_LINE.exec(text)!;
    const firstLog = /^\{"level"/m.exec(text)!;
    assert.ok(firstLog.index >= bannerEnd.index + bannerEnd[0].length, text);
    assert.doesNotMatch(text, PRETTY_LINE);
    await stop(cli, (JSON.parse(line) as { pid: number }).pid);
  });

  it("on a terminal with --workers 2: one administrator, printed once by the primary, and the workers' log lines after it", async function () {
    if (!hasScript()) this.skip();
    const cli = track(runCliInTerminal(["serve", "--port", "0", "--workers", "2", "--database", freshDatabase()], cleanEnv()));
    const [, url, issuer] = (await cli.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+) \(issuer (\S+)\)/))!;
    const [, password] = (await cli.waitFor(/^Admin console: \S+\n\s+username:\s+admin\n\s+password:\s+(\S+)$/m))!;
    await cli.waitFor(/^\[[\d:.]+\] INFO \(\d+\): admin console application created$/m);
    const text = cli.stdout();
    const bannerEnd = CURL_LINE.exec(text)!;
    assert.ok(PRETTY_LINE.exec(text)!.index >= bannerEnd.index + bannerEnd[0].length, `a worker's log line came before the start's own lines:\n${text}`);
    const tokens = await consoleTokens(url!, issuer!, { name: "admin", password: password! });
    assert.ok(tokens.scope?.split(" ").includes(ADMIN_SCOPE), tokens.scope);
    // `script` passes the signal to the primary, which drains the workers.
    cli.child.kill("SIGTERM");
    await cli.exited;
  });

  it("not on a terminal: creates no administrator, prints the one command that makes one, and logs JSON lines", async () => {
    const database = freshDatabase();
    const cli = track(runCli(["serve", "--port", "0", "--database", database], cleanEnv()));
    try {
      const [, url, issuer] = (await cli.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+) \(issuer (\S+)\)/))!;
      await cli.waitFor(CURL_LINE);
      const [, consoleUrl, command] = (await cli.waitFor(/^Admin console: (\S+)\n[\s\S]*?^\s+(\S.* user create --name admin .*)$/m))!;
      assert.equal(consoleUrl, `${issuer}/admin`);
      assert.doesNotMatch(cli.stdout(), /username:\s+admin/);
      // No administrator exists yet: the admin name does not sign in.
      await assert.rejects(consoleTokens(url!, issuer!, { name: "admin", password: "anything-at-all" }), /login answered 4\d\d/);

      // The command, run as printed with a password chosen for the blank, makes one that opens the console.
      assert.match(command!, /--password <password>/);
      const chosen = "chosen-admin-password-1";
      const { stdout } = await promisify(execFile)("sh", ["-c", command!.replace("<password>", chosen)], { encoding: "utf8" });
      assert.equal((JSON.parse(stdout) as { isAdmin: boolean }).isAdmin, true, stdout);
      const tokens = await consoleTokens(url!, issuer!, { name: "admin", password: chosen });
      assert.ok(tokens.scope?.split(" ").includes(ADMIN_SCOPE), tokens.scope);

      // Logs stay JSON lines, and the seed made no administrator.
      await cli.waitFor(/listening/);
      const lines = cli.stderr().trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.ok(lines.some((l) => l.msg === "admin console application created"), cli.stderr());
      const created = lines.filter((l) => l.event === "user_created").map((l) => l.userName);
      assert.deepEqual(created, ["demo"]);
    } finally {
      cli.child.kill("SIGTERM");
    }
    assert.equal(await cli.exited, 0);
  });
});
