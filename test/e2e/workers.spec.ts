import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { cleanEnv, ensureBuilt, runCli, type CliProcess } from "../support/cli.js";
import { refuseUnsharedDatabase, workerCount } from "../../src/app/workers.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { ADMIN_TOKEN, basicAuth, TEST_APP, writeConfigFile } from "../support/server.js";
import { eventually, scaledMs } from "../support/deadline.js";

/**
 * `identity serve --workers 2`: two processes on one port and one
 * database (a SQLite file, and PostgreSQL when DATABASE_URL names one).
 * Round-robin picks the worker of each new connection, so every
 * request here opens its own connection and each test checks, from the
 * request log lines' pids, that both workers answered.
 */
const ON_DISK = BACKENDS.filter((b) => b.name !== "SQLite :memory:");

describeEachDatabase("serve --workers", (ctx) => {
  let served: CliProcess;
  let base: string;
  let workerPids: number[];

  before(async function () {
    // Covers a rebuild of dist/ when the sources are newer, and two processes starting on a loaded machine.
    this.timeout(60_000 + scaledMs(60_000));
    ensureBuilt();
    const config = writeConfigFile({ applications: [TEST_APP] });
    served = runCli(
      ["serve", "--port", "0", "--workers", "2", "--database", ctx.url, "--config", config, "--admin-token", ADMIN_TOKEN],
      cleanEnv(),
    );
    const [, url] = await served.waitFor(/identity-service listening on (http:\/\/\S+)/);
    base = url!;
    const [, pids] = await served.waitFor(/2 workers \(pids (\d+), (\d+)\)/).then((m) => [m[0], `${m[1]},${m[2]}`]);
    workerPids = pids!.split(",").map(Number);
  });

  after(async () => {
    if (served.child.exitCode === null) {
      served.child.kill("SIGKILL");
      await served.exited;
    }
  });

  /** One request on a connection of its own (so round-robin may give it to either worker). */
  const request = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${base}${path}`, { method, agent: false, headers: { ...headers, ...(body ? { "content-length": Buffer.byteLength(body) } : {}) } }, (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on("error", reject);
      req.end(body);
    });
  const clientCredentials = (secret: string) =>
    request("POST", "/api/login/oauth/access_token", "grant_type=client_credentials", {
      "content-type": "application/x-www-form-urlencoded",
      authorization: basicAuth(TEST_APP.clientId, secret),
    });
  /** The pids of the request lines logged from `from` on (stderr offset) for `route`. */
  const servedBy = (from: number, route: string) =>
    new Set(
      served
        .stderr()
        .slice(from)
        .split("\n")
        .filter((line) => line.includes('"msg":"request"') && line.includes(`"route":"${route}"`))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    );
  /** Log lines reach us from the workers' stderr a moment after their answers: wait for both workers' lines of `route`. */
  const bothLogged = (from: number, route: string) => eventually(`both workers' log lines of ${route}`, () => servedBy(from, route).size === 2);
  const TOKEN_ROUTE = "/api/login/oauth/access_token";

  /** A token request whose body is half sent once the server has taken it on (100 Continue); finish() sends the rest. */
  const holdRequest = async () => {
    const socket = net.connect(Number(new URL(base).port), "127.0.0.1");
    await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    let received = "";
    socket.setEncoding("utf8").on("data", (c: string) => (received += c));
    socket.on("error", () => {});
    const until = async (pattern: RegExp) => {
      for (let i = 0; !pattern.test(received); i++) {
        assert.ok(i < 400 && !socket.destroyed, `no ${pattern} in: ${received}`);
        await sleep(25);
      }
    };
    const body = "grant_type=client_credentials";
    socket.write(
      [
        `POST ${TOKEN_ROUTE} HTTP/1.1`,
        "Host: 127.0.0.1",
        "Content-Type: application/x-www-form-urlencoded",
        `Content-Length: ${body.length}`,
        `Authorization: ${basicAuth("no-such-client", "no-secret")}`,
        "Expect: 100-continue",
        "",
        "",
      ].join("\r\n"),
    );
    await until(/100 Continue\r\n\r\n/);
    socket.write(body.slice(0, 10));
    return {
      finish: async () => {
        socket.write(body.slice(10));
        await until(/\r\n\r\n\{[^]*\}$/);
        socket.destroy();
        return received;
      },
    };
  };

  it("prints one listening line, for one port both workers serve", async () => {
    assert.equal(served.stdout().match(/identity-service listening on/g)?.length, 1);
    assert.equal(new Set(workerPids).size, 2);
    const from = served.stderr().length;
    for (let i = 0; i < 6; i++) assert.equal((await request("GET", "/.well-known/openid-configuration")).status, 200);
    await bothLogged(from, "/.well-known/openid-configuration");
    assert.deepEqual([...servedBy(from, "/.well-known/openid-configuration")].sort(), [...workerPids].sort());
  });

  it("every worker knows the admin console's client, made once at start", async () => {
    const from = served.stderr().length;
    const query = new URLSearchParams({
      client_id: "identity-console",
      redirect_uri: `${base}/admin/`,
      response_type: "code",
      scope: "openid profile identity:admin",
      state: "s-1",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
    });
    for (let i = 0; i < 8; i++) assert.equal((await request("GET", `/login/oauth/authorize?${query}`)).status, 200, "the login page");
    assert.equal(servedBy(from, "/login/oauth/authorize").size, 2, "both workers served it");
    const made = served.stderr().split("\n").filter((l) => l.includes("admin console application created"));
    assert.equal(made.length, 1, "created by the first worker only");
  });

  it("sums the metrics of every worker in one scrape", async () => {
    const count = async () => {
      const text = (await request("GET", "/metrics")).body;
      const line = text.split("\n").find((l) => l.startsWith('identity_http_requests_total{route="/.well-known/jwks",method="GET",status="200"'));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const before = await count();
    const from = served.stderr().length;
    for (let i = 0; i < 10; i++) assert.equal((await request("GET", "/.well-known/jwks")).status, 200);
    await bothLogged(from, "/.well-known/jwks");
    assert.equal(servedBy(from, "/.well-known/jwks").size, 2, "both workers served");
    // Any worker answers the scrape with the total.
    for (let i = 0; i < 2; i++) assert.equal(await count(), before + 10);
  });

  it("a secret change and a deletion through one worker hold in every worker from the next request", async () => {
    const admin = (method: string, body: unknown) =>
      request("POST", `/identity.v1.ApplicationAdminService/${method}`, JSON.stringify(body), {
        "content-type": "application/json",
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
    /** Both workers have the application in their cache (1 s) ... */
    const warm = async (secret: string) => {
      const from = served.stderr().length;
      for (let i = 0; i < 4; i++) assert.equal((await clientCredentials(secret)).status, 200);
      await bothLogged(from, TOKEN_ROUTE);
      assert.equal(servedBy(from, TOKEN_ROUTE).size, 2);
    };
    /** ... when one changes it: every next request, in either worker, is refused. */
    const refusedEverywhere = async (secret: string) => {
      const from = served.stderr().length;
      for (let i = 0; i < 6; i++) {
        const answer = await clientCredentials(secret);
        assert.equal(answer.status, 401, `request ${i + 1}: ${answer.body}`);
        assert.equal((JSON.parse(answer.body) as { error: string }).error, "invalid_client");
      }
      await bothLogged(from, TOKEN_ROUTE);
      assert.equal(servedBy(from, TOKEN_ROUTE).size, 2, "both workers refused");
    };

    await warm(TEST_APP.clientSecret);
    const newSecret = "a-new-secret-of-client-1-for-workers";
    const updated = await admin("UpdateApplication", { application: { name: TEST_APP.name, clientSecret: newSecret } });
    assert.equal(updated.status, 200, updated.body);
    await refusedEverywhere(TEST_APP.clientSecret);

    await warm(newSecret);
    const deleted = await admin("DeleteApplication", { name: TEST_APP.name });
    assert.equal(deleted.status, 200, deleted.body);
    await refusedEverywhere(newSecret);
  });

  it("a key rotation through one worker is published by every worker from the next request", async () => {
    const jwksKids = async () => {
      const answer = await request("GET", "/.well-known/jwks");
      assert.equal(answer.status, 200);
      return (JSON.parse(answer.body) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    };
    for (let i = 0; i < 4; i++) await jwksKids(); // both workers have loaded the keys (re-read every 10 s)
    const rotated = await request("POST", "/identity.v1.KeyAdminService/RotateKey", "{}", {
      "content-type": "application/json",
      authorization: `Bearer ${ADMIN_TOKEN}`,
    });
    assert.equal(rotated.status, 200, rotated.body);
    const kid = (JSON.parse(rotated.body) as { key: { kid: string } }).key.kid;
    const from = served.stderr().length;
    for (let i = 0; i < 6; i++) assert.ok((await jwksKids()).includes(kid), `request ${i + 1}: ${kid} not published`);
    await bothLogged(from, "/.well-known/jwks");
    assert.equal(servedBy(from, "/.well-known/jwks").size, 2, "both workers published it");
  });

  it("replaces a worker that dies, and drains every worker on SIGTERM, exiting 0", async () => {
    process.kill(workerPids[0]!, "SIGKILL");
    for (let i = 0; !served.stderr().includes('"msg":"worker replaced"'); i++) {
      assert.ok(i < 200, `no replacement: ${served.stderr().slice(-2000)}`);
      await sleep(50);
    }
    assert.match(served.stderr(), /worker exited unexpectedly: starting another/);
    for (let i = 0; i < 4; i++) assert.equal((await request("GET", "/healthz")).status, 200);

    // Requests in flight on both workers (half their body sent) when the primary gets SIGTERM ...
    const from = served.stderr().length;
    const held = await Promise.all([holdRequest(), holdRequest(), holdRequest(), holdRequest()]);
    served.child.kill("SIGTERM");
    // Each worker logs its shutdown when the primary tells it to drain: finish the requests after that, however long it took.
    const drainingWorkers = () => served.stderr().slice(from).split("\n").filter((l) => l.includes('"msg":"shutting down"') && l.includes('"signal":"primary"'));
    await eventually("both workers shutting down", () => drainingWorkers().length === 2);
    // ... are answered: each worker drains before it exits.
    for (const request of held) {
      const answer = await request.finish();
      assert.match(answer, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 401 /);
      assert.match(answer, /\r\nconnection: close\r\n/i);
    }
    assert.equal(await served.exited, 0);
    assert.equal(servedBy(from, TOKEN_ROUTE).size, 2, "both workers drained requests");
    const lines = served.stderr().split("\n").filter((l) => l.includes('"msg":"stopped"'));
    assert.equal(lines.length, 3, "two workers and the primary stopped");
  });
}, ON_DISK);

describe("serve --workers, starting", () => {
  it("counts 0 as one worker per core, and 1 or unset as a single process", () => {
    assert.equal(workerCount(0), availableParallelism());
    assert.equal(workerCount(undefined), 1);
    assert.equal(workerCount(3), 3);
  });

  it("exits 1 when the first worker cannot start, naming why", async function () {
    this.timeout(60_000 + scaledMs(30_000));
    ensureBuilt();
    // Changed with issue 41 (§8): two workers need a database they share, so a file here, not :memory:.
    const dir = mkdtempSync(join(tmpdir(), "identity-workers-"));
    const failed = runCli(["serve", "--port", "0", "--workers", "2", "--database", join(dir, "identity.sqlite"), "--config", "/no/such/config.json"], cleanEnv());
    assert.equal(await failed.exited, 1);
    assert.match(failed.stderr(), /cannot read \/no\/such\/config\.json/);
    assert.match(failed.stderr(), /a worker failed to start/);
    assert.doesNotMatch(failed.stdout(), /listening on/);
    rmSync(dir, { recursive: true, force: true });
  });

  it("takes only a database every worker opens alike: a file or PostgreSQL, not one in memory", () => {
    for (const database of [":memory:", "", "file::memory:", "file:shared?mode=memory&cache=shared"]) {
      assert.throws(() => refuseUnsharedDatabase(2, database), /in-memory database/, database);
      assert.doesNotThrow(() => refuseUnsharedDatabase(1, database), database);
    }
    for (const database of ["./data/identity.sqlite", "/tmp/:memory:.sqlite", "file:identity.sqlite", "postgres://db/identity"]) {
      assert.doesNotThrow(() => refuseUnsharedDatabase(4, database), database);
    }
  });

  // Issue 41, §8: each worker would open a database of its own, so a user disabled through one stays active on the others.
  it("refuses more than one worker on an in-memory database, saying why, with no stack trace", async function () {
    this.timeout(30_000);
    ensureBuilt();
    for (const [args, env] of [
      [["--workers", "2", "--database", ":memory:"], {}],
      [["--workers", "2"], { DATABASE_URL: ":memory:" }],
      [["--database", ":memory:"], { IDENTITY_WORKERS: "3" }],
    ] as const) {
      const refused = runCli(["serve", "--port", "0", ...args, "--admin-token", ADMIN_TOKEN], cleanEnv(env));
      // Serving is the failure: stop it then, rather than wait for an exit that never comes.
      const served = refused.waitFor(/listening on/).then(
        () => true,
        () => false,
      );
      if (await served) {
        refused.child.kill("SIGKILL");
        await refused.exited;
        assert.fail(`started: ${args.join(" ")} ${JSON.stringify(env)}`);
      }
      const code = await refused.exited;
      assert.notEqual(code, 0, `${args.join(" ")} ${JSON.stringify(env)}`);
      assert.match(refused.stderr(), /^identity: .*in-memory database.*workers/m);
      assert.doesNotMatch(refused.stderr(), /^\s+at /m, "no stack trace");
      assert.doesNotMatch(refused.stdout(), /listening on/);
    }
  });
});
