import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningServer } from "../../src/app/server.js";
import { describePostgres, freshPostgresSchema, POSTGRES_URL, type PostgresSchema } from "../support/databases.js";
import { Relay } from "../support/tcpRelay.js";
import { basicAuth, call, postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";
import { eventually, scaledMs } from "../support/deadline.js";

/** The deadline the servers here run with, and what an answer may take beyond it on a busy machine (scaled by its load). */
const DEADLINE_MS = 1500;
const MARGIN_MS = scaledMs(1000);

interface Timed {
  result: HttpResult;
  ms: number;
}

async function timed(request: () => Promise<HttpResult>): Promise<Timed> {
  const started = performance.now();
  const result = await request();
  return { result, ms: performance.now() - started };
}

function passwordGrant(server: RunningServer): Promise<HttpResult> {
  return postForm(
    `${server.url}/api/login/oauth/access_token`,
    { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password },
    { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
  );
}

function clientCredentials(server: RunningServer): Promise<HttpResult> {
  return postForm(
    `${server.url}/api/login/oauth/access_token`,
    { grant_type: "client_credentials" },
    { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
  );
}

async function introspect(server: RunningServer, token: string): Promise<boolean> {
  const answer = await postForm(
    `${server.url}/api/login/oauth/introspect`,
    { token },
    { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
  );
  assert.equal(answer.status, 200, answer.text);
  return answer.body.active === true;
}

/** Every answer a 503 temporarily_unavailable with Retry-After, within the deadline and its margin. */
function assertPromptRefusals(answers: Timed[]): void {
  for (const { result, ms } of answers) {
    assert.equal(result.status, 503, result.text);
    assert.equal(result.body.error, "temporarily_unavailable");
    assert.ok(Number(result.headers.get("retry-after")) > 0);
    assert.ok(ms < DEADLINE_MS + MARGIN_MS, `answered after ${Math.round(ms)} ms`);
  }
}

/** How long until a token request succeeds again, polling every 100 ms. */
async function timeToRecover(server: RunningServer, limitMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const answer = await clientCredentials(server);
    if (answer.status === 200) return performance.now() - started;
    assert.equal(answer.status, 503, answer.text);
    assert.ok(performance.now() - started < limitMs, `not recovered after ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const report = (what: string, values: number[]) =>
  console.log(`      ${what}: ${values.map((v) => Math.round(v)).sort((a, b) => a - b).join(", ")} ms`);

describePostgres("the database goes silent (PostgreSQL behind a frozen network)", () => {
  let schema: PostgresSchema;
  let relay: Relay;
  let server: RunningServer;

  before(async () => {
    schema = freshPostgresSchema();
    const target = new URL(POSTGRES_URL!);
    relay = new Relay({ host: target.hostname, port: Number(target.port || 5432) });
    await relay.start();
    const viaRelay = new URL(schema.url);
    viaRelay.port = String(relay.port);
    server = await startTestServer({
      database: viaRelay.toString(),
      // No sign-in lockout: password grants cut short by the outage must not lock the test's user out.
      overrides: { dbConnectTimeoutMs: 1000, dbQueryTimeoutMs: DEADLINE_MS, dbPoolMax: 10, loginMaxFailures: 0, loginMaxFailuresPerIp: 0 },
    });
  });

  after(async () => {
    relay?.thaw();
    await server?.close();
    await relay?.stop();
    await schema?.drop();
  });

  it("answers every token request 503 within the deadline while frozen, is not ready, and recovers once thawed", async function () {
    this.timeout(30000);
    // Pooled connections that will be caught by the freeze, idle or mid-query.
    await Promise.all(Array.from({ length: 10 }, () => passwordGrant(server)));

    relay.freeze();
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => timed(() => (i % 2 ? passwordGrant(server) : clientCredentials(server)))),
      );
      report("token requests during the freeze", answers.map((a) => a.ms));
      assertPromptRefusals(answers);

      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.equal(((await ready.json()) as { status: string }).status, "not_ready");

      // A second wave: the pool's broken connections were dropped, new ones hang on connect.
      const again = await Promise.all(Array.from({ length: 10 }, () => timed(() => passwordGrant(server))));
      report("a second wave during the freeze", again.map((a) => a.ms));
      assertPromptRefusals(again);
    } finally {
      relay.thaw();
    }
    const recovery = await timeToRecover(server, scaledMs(5000));
    report("recovery after the thaw", [recovery]);
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 4 ? clientCredentials(server) : passwordGrant(server))));
    assert.deepEqual(after.map((a) => a.status), Array(10).fill(200), after.map((a) => a.text).join("\n"));
  });

  it("loses no acknowledged token when the database is cut and comes back under load", async function () {
    this.timeout(30000);
    const issued: string[] = [];
    const refusals: HttpResult[] = [];
    let running = true;
    const worker = async (i: number) => {
      while (running) {
        const answer = await (i % 2 ? passwordGrant(server) : clientCredentials(server));
        if (answer.status === 200) issued.push(answer.body.access_token as string);
        else {
          refusals.push(answer);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, i) => worker(i));
    // Each phase lasts until what it is for has happened, however slow the machine.
    await eventually("tokens issued before the cut", () => issued.length >= 20);
    const beforeCut = issued.length;
    await relay.stop();
    await eventually("the cut noticed", () => refusals.length >= 8);
    await relay.start();
    const atRestart = issued.length;
    await eventually("tokens issued after the restart", () => issued.length >= atRestart + 20);
    running = false;
    await Promise.all(workers);

    console.log(`      issued ${beforeCut} before the cut, ${issued.length - atRestart} after the restart; ${refusals.length} refused`);
    assert.ok(beforeCut > 0 && issued.length > atRestart, "issued before the cut and after the restart");
    assert.ok(refusals.length > 0, "the cut was noticed");
    for (const refusal of refusals) {
      assert.equal(refusal.status, 503, refusal.text);
      assert.equal(refusal.body.error, "temporarily_unavailable");
    }
    for (const token of issued) assert.equal(await introspect(server, token), true, "an acknowledged token was lost");
  });
});

describe("the database goes silent (SQLite locked by another process)", () => {
  let dir: string;
  let server: RunningServer;
  let holder: ChildProcess | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "identity-silence-"));
    server = await startTestServer({ database: join(dir, "identity.sqlite"), overrides: { dbQueryTimeoutMs: DEADLINE_MS } });
  });

  after(async () => {
    holder?.kill();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Another process takes the write lock (BEGIN EXCLUSIVE) and holds it until its standard input closes. */
  async function holdWriteLock(file: string): Promise<ChildProcess> {
    const script = `
      const sqlite3 = require("sqlite3");
      const db = new sqlite3.Database(process.argv[1]);
      db.exec("BEGIN EXCLUSIVE", (err) => {
        if (err) { console.error(err.message); process.exit(1); }
        process.stdout.write("locked\\n");
      });
      process.stdin.on("end", () => db.exec("ROLLBACK", () => db.close(() => process.exit(0))));
      process.stdin.resume();
    `;
    const child = spawn(process.execPath, ["-e", script, file], { stdio: ["pipe", "pipe", "inherit"], cwd: process.cwd() });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (data: Buffer) => data.toString().includes("locked") && resolve());
      child.once("exit", (code) => reject(new Error(`the lock holder exited (${code})`)));
    });
    return child;
  }

  it("answers every token request within the deadline while another process holds the write lock, and resumes when it lets go", async function () {
    this.timeout(30000);
    assert.equal((await passwordGrant(server)).status, 200);

    holder = await holdWriteLock(join(dir, "identity.sqlite"));
    const tokenRequests = Promise.all(
      Array.from({ length: 10 }, (_, i) => timed(() => (i % 2 ? passwordGrant(server) : clientCredentials(server)))),
    );
    // The event loop keeps turning meanwhile: a liveness probe halfway through answers at once.
    await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS / 2));
    const probe = await timed(() => call(`${server.url}/healthz`));
    const answers = await tokenRequests;
    report("token requests while locked", answers.map((a) => a.ms));
    report("/healthz meanwhile", [probe.ms]);
    assertPromptRefusals(answers);
    assert.ok(probe.ms < scaledMs(500), `/healthz took ${Math.round(probe.ms)} ms`);

    // Still locked: a second wave, some of it behind statements that are still waiting for the lock.
    const again = await Promise.all(Array.from({ length: 10 }, () => timed(() => clientCredentials(server))));
    report("a second wave while locked", again.map((a) => a.ms));
    assertPromptRefusals(again);

    const released = new Promise((resolve) => holder!.once("exit", resolve));
    holder.stdin!.end();
    await released;
    holder = undefined;
    const recovery = await timeToRecover(server, scaledMs(3000));
    report("recovery after the lock is released", [recovery]);
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 4 ? clientCredentials(server) : passwordGrant(server))));
    assert.deepEqual(after.map((a) => a.status), Array(10).fill(200), after.map((a) => a.text).join("\n"));
    for (const answer of after) assert.equal(await introspect(server, answer.body.access_token as string), true);
  });
});
