import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createLogger, heldLines, SECRET_FIELDS } from "./../../src/shared/log.js";
import { captureLogs } from "./../support/logs.js";
import { scaledMs } from "./../support/deadline.js";

describe("logger", () => {
  it("writes one JSON object per line with level name, time and message", () => {
    const logs = captureLogs("info");
    logs.logger.info("hello", { answer: 42 });
    logs.logger.debug("hidden at info");
    const lines = logs.lines();
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, "info");
    assert.equal(lines[0]!.msg, "hello");
    assert.equal(lines[0]!.answer, 42);
    assert.ok(!Number.isNaN(Date.parse(lines[0]!.time)));
    assert.equal(logs.logger.enabled("debug"), false);
  });

  it("redacts every secret field name at the top level and two objects deep", () => {
    const logs = captureLogs("info");
    const secrets = SECRET_FIELDS.map((name, i) => [name, `secret-value-${i}-x`] as const);
    const fields = Object.fromEntries(secrets);
    logs.logger.info("top", fields);
    logs.logger.info("one deep", { request: fields });
    logs.logger.info("two deep", { err: { request: fields } });
    const text = logs.text();
    for (const [name, value] of secrets) assert.ok(!text.includes(value), `${name} leaked`);
    const [top, oneDeep, twoDeep] = logs.lines();
    assert.equal(top!.password, "[redacted]");
    assert.equal(oneDeep!.request.authorization, "[redacted]");
    assert.equal(twoDeep!.err.request["set-cookie"], "[redacted]");
  });

  it("writes an infoPlain line as info writes it: same keys in the same order, redacted, silent below info", () => {
    const logs = captureLogs("info");
    const fields = { event: "token_issued", actor: { kind: "client", id: "a1", name: "app \"one\"\u2028" }, details: { grantType: "x", token: "secret-value-p" } };
    logs.logger.info("audit event", fields);
    logs.logger.infoPlain("audit event", fields);
    logs.logger.infoPlain("no fields", {});
    const [viaPino, plain, empty] = logs.text().split("\n");
    // The same text but for the time, which may have moved a millisecond.
    const untimed = (line: string) => line.replace(/"time":"[^"]+"/, '"time":""');
    assert.equal(untimed(plain!), untimed(viaPino!));
    assert.ok(!logs.text().includes("secret-value-p"));
    assert.deepEqual(Object.keys(JSON.parse(empty!)), ["level", "time", "pid", "hostname", "msg"]);
    const quiet = captureLogs("warn");
    quiet.logger.infoPlain("hidden", { a: 1 });
    assert.equal(quiet.text(), "");
  });

  it("censors the query string of a request target, an HTTP/2 :path among headers included", () => {
    const logs = captureLogs("info");
    logs.logger.info("request", { headers: { ":path": "/api/userinfo?access_token=secret-in-path", ":method": "GET" }, url: "/x?code=secret-in-url" });
    logs.logger.info("request", { headers: { ":path": "/api/userinfo" } });
    assert.ok(!logs.text().includes("secret-in"));
    const [withQuery, plain] = logs.lines();
    assert.equal(withQuery!.headers[":path"], "/api/userinfo?[redacted]");
    assert.equal(withQuery!.url, "/x?[redacted]");
    assert.equal(plain!.headers[":path"], "/api/userinfo");
  });

  it("redacts a copy: the caller's objects keep their values", () => {
    const logs = captureLogs("info");
    const headers = { authorization: "Bearer keep-me", host: "example" };
    const fields = { headers, route: "/x" };
    logs.logger.info("request", fields);
    assert.equal(logs.lines()[0]!.headers.authorization, "[redacted]");
    assert.equal(logs.lines()[0]!.headers.host, "example");
    assert.equal(headers.authorization, "Bearer keep-me");
    assert.equal(fields.headers, headers);
  });

  describe("on standard error", () => {
    const logModule = fileURLToPath(new URL("../../src/shared/log.ts", import.meta.url));

    /** Runs `script` (with `log`, an info logger on stderr) in a child; resolves with each stderr line and when it came. */
    function child(script: string): Promise<{ code: number | null; lines: { msg: string; time: string; at: number }[] }> {
      const program = `import { createLogger } from ${JSON.stringify(logModule)}; const log = createLogger({ level: "info" }); ${script}`;
      const proc = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], { stdio: ["ignore", "ignore", "pipe"] });
      const started = Date.now();
      const lines: { msg: string; time: string; at: number }[] = [];
      let partial = "";
      proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        const parts = (partial + chunk).split("\n");
        partial = parts.pop()!;
        for (const line of parts) lines.push({ ...(JSON.parse(line) as { msg: string; time: string }), at: Date.now() - started });
      });
      return new Promise((resolve) => proc.on("close", (code) => resolve({ code, lines })));
    }

    it("writes lines still pending when the process exits at once, in order", async () => {
      const run = await child(`log.info("first"); log.info("second"); process.exit(3);`);
      assert.equal(run.code, 3);
      assert.deepEqual(run.lines.map((l) => l.msg), ["first", "second"]);
    });

    it("writes a line soon, without waiting for more lines or the process's end", async () => {
      // From a timer callback, where the event loop's clock is fresh: the late line really comes a second later.
      // The gap is a second on an idle machine, longer on a loaded one, where lines may reach us late.
      const gapMs = scaledMs(1000);
      const run = await child(`setTimeout(() => { log.info("early"); setTimeout(() => log.info("late"), ${gapMs}); }, 0);`);
      assert.deepEqual(run.lines.map((l) => l.msg), ["early", "late"]);
      assert.ok(run.lines[1]!.at - run.lines[0]!.at > gapMs / 2, `the early line came with the late one: ${JSON.stringify(run.lines)}`);
    });

    it("stamps each line with the time it was written, to the millisecond", async () => {
      const run = await child(`log.info("a"); const t = Date.now(); while (Date.now() < t + 5); log.info("b");`);
      const [a, b] = run.lines.map((l) => Date.parse(l.time));
      assert.ok(b! - a! >= 5, `times ${run.lines.map((l) => l.time).join(", ")}`);
    });
  });

  describe("held lines (on a terminal, until the start's own lines are out)", () => {
    it("keeps every line, plain ones included, until released, then writes them in order, and later ones at once", () => {
      const written: string[] = [];
      const held = heldLines({ write: (line: string) => void written.push(line) });
      const logger = createLogger({ level: "info", destination: held });
      logger.info("one");
      logger.infoPlain("two", { n: 2 });
      assert.deepEqual(written, []);
      held.release();
      logger.warn("three");
      held.release();
      assert.deepEqual(written.map((line) => (JSON.parse(line) as { msg: string }).msg), ["one", "two", "three"]);
    });

    it("writes lines still held when the process exits to standard error, as they are", async () => {
      const logModule = fileURLToPath(new URL("../../src/shared/log.ts", import.meta.url));
      const program = `import { createLogger, heldLines } from ${JSON.stringify(logModule)};
        const log = createLogger({ level: "info", destination: heldLines({ write() { throw new Error("never released"); } }) });
        log.info("held until exit"); process.exitCode = 4;`;
      const proc = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const code = await new Promise((resolve) => proc.on("close", resolve));
      assert.equal(code, 4, stderr);
      assert.equal((JSON.parse(stderr.trim()) as { msg: string }).msg, "held until exit");
    });
  });
});
