import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { cleanEnv, ensureBuilt, MAIN } from "../support/cli.js";
import { basicAuth, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

interface Served {
  child: ChildProcess;
  port: number;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `identity serve` as operators run it: the built CLI in its own process. */
async function serveProcess(): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), "identity-lifecycle-"));
  const config = writeConfigFile({ applications: [TEST_APP], users: [TEST_USER] });
  const child = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--database", join(dir, "db.sqlite"), "--config", config], {
    env: cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    void exit.then(({ code }) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  return { child, port, stderr: () => stderr, exit };
}

/** A raw HTTP/1.1 connection, so a request can be held half-sent. */
async function rawConnection(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  let received = "";
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.setEncoding("utf8").on("data", (c: string) => (received += c));
  socket.on("error", () => {});
  const until = async (predicate: (text: string) => boolean) => {
    while (!predicate(received)) {
      if (socket.destroyed) throw new Error(`connection closed; received: ${received}`);
      await sleep(10);
    }
    return received;
  };
  return { socket, until, closed, received: () => received };
}

/** Starts a token request and stops halfway through its body, once the server has taken it on. */
async function holdTokenRequest(port: number) {
  const conn = await rawConnection(port);
  const body = new URLSearchParams({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }).toString();
  conn.socket.write(
    [
      "POST /api/login/oauth/access_token HTTP/1.1",
      "Host: 127.0.0.1",
      "Content-Type: application/x-www-form-urlencoded",
      `Content-Length: ${body.length}`,
      `Authorization: ${basicAuth(TEST_APP.clientId, TEST_APP.clientSecret)}`,
      "Expect: 100-continue",
      "",
      "",
    ].join("\r\n"),
  );
  // 100 Continue proves the server parsed the request and is waiting for its body.
  await conn.until((text) => text.startsWith("HTTP/1.1 100 Continue\r\n\r\n"));
  const half = Math.floor(body.length / 2);
  conn.socket.write(body.slice(0, half));
  return { ...conn, finish: () => conn.socket.write(body.slice(half)) };
}

async function refusesConnections(port: number): Promise<void> {
  for (;;) {
    const accepted = await new Promise<boolean>((resolve) => {
      const probe = net.connect(port, "127.0.0.1");
      probe.once("connect", () => (probe.destroy(), resolve(true)));
      probe.once("error", () => resolve(false));
    });
    if (!accepted) return;
    await sleep(20);
  }
}

describe("serve process lifecycle", () => {
  before(function () {
    this.timeout(120_000); // covers a rebuild of dist/ when the sources are newer
    ensureBuilt();
  });
  let served: Served | undefined;
  afterEach(() => {
    if (served?.child.exitCode === null) served.child.kill("SIGKILL");
  });

  it("on SIGTERM refuses new connections, finishes the request in flight and exits 0", async () => {
    served = await serveProcess();
    const held = await holdTokenRequest(served.port);
    served.child.kill("SIGTERM");
    await refusesConnections(served.port);

    held.finish();
    await held.closed; // the server closes it after answering: it is draining
    const response = held.received().slice("HTTP/1.1 100 Continue\r\n\r\n".length);
    assert.match(response, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(response, /\r\nconnection: close\r\n/i);
    const token = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));
    assert.equal(token.token_type, "Bearer");
    assert.ok(token.access_token);

    assert.deepEqual(await served.exit, { code: 0, signal: null });
    const lines = served.stderr().trim().split("\n").map((l) => JSON.parse(l));
    const messages = lines.map((l) => l.msg);
    assert.ok(messages.indexOf("shutting down") < messages.indexOf("stopped"));
    assert.ok(lines.some((l) => l.msg === "request" && l.route === "/api/login/oauth/access_token" && l.status === 200));
  });

  it("exits at once on a second signal", async () => {
    served = await serveProcess();
    const held = await holdTokenRequest(served.port);
    served.child.kill("SIGTERM");
    await refusesConnections(served.port);
    served.child.kill("SIGTERM");
    assert.deepEqual(await served.exit, { code: 143, signal: null });
    await held.closed;
    assert.ok(!held.received().includes("HTTP/1.1 200"), "the held request was not answered");
  });
});
