import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { parseServeConfig } from "../../src/app/config.js";
import { MAX_STATE_LENGTH } from "../../src/oauth/authorizeRequest.js";
import type { RunningServer } from "../../src/app/server.js";
import { DEFAULT_CONNECTION_LIMITS } from "../../src/http/transport.js";
import { authorizeUrl } from "../support/browserless.js";
import { basicAuth, startTestServer, TEST_APP } from "../support/server.js";
import { exchange, header, type WireResponse } from "../support/fuzz/wire.js";
import { scaledMs } from "../support/deadline.js";

/** The timeouts of the server under test, in seconds (the smallest the options take). */
const HEADERS_TIMEOUT = 1;
const REQUEST_TIMEOUT = 2;
const IDLE_TIMEOUT = 1;
/** How late a close may come: the timeout checks run once a second, and the machine may be busy (scaled by its load). */
const SLACK_MS = scaledMs(3000);

/** A connection the test drives byte by byte; resolves `closed` with what the server sent before closing. */
function slowClient(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  let received = "";
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  socket.on("error", () => {});
  const opened = Date.now();
  const closed = new Promise<{ received: string; afterMs: number }>((resolve) =>
    socket.once("close", () => resolve({ received, afterMs: Date.now() - opened })),
  );
  return { socket, closed };
}

/** Resolves with the close, or fails once `boundMs` has passed with the connection still open. */
async function closedWithin<T>(closed: Promise<T>, boundMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still open after ${boundMs} ms`)), boundMs)));
  try {
    return await Promise.race([closed, late]);
  } finally {
    clearTimeout(timer);
  }
}

function parseJsonError(raw: string): { status: number; body: any } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
  return { status, body: JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)) };
}

describe("connection limits", () => {
  describe("defaults", () => {
    it("are bounded: 16 KiB of headers, 10 s for them, 30 s per request, 2 min idle HTTP/2, 64 KiB bodies", () => {
      const config = parseServeConfig([], {});
      assert.equal(config.maxHeaderBytes, 16384);
      assert.equal(config.headersTimeoutSeconds, 10);
      assert.equal(config.requestTimeoutSeconds, 30);
      assert.equal(config.idleTimeoutSeconds, 120);
      assert.equal(config.maxBodyBytes, 65536);
      assert.deepEqual(DEFAULT_CONNECTION_LIMITS, { maxHeaderBytes: 16384, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, idleTimeoutMs: 120_000 });
    });

    it("are set by flags and environment variables, and nonsense is refused", () => {
      const config = parseServeConfig(["--max-header-bytes", "4096", "--request-timeout-seconds", "5"], { IDENTITY_HEADERS_TIMEOUT_SECONDS: "3" });
      assert.equal(config.maxHeaderBytes, 4096);
      assert.equal(config.headersTimeoutSeconds, 3);
      assert.equal(config.requestTimeoutSeconds, 5);
      assert.throws(() => parseServeConfig(["--max-header-bytes", "0"], {}), /--max-header-bytes/);
      assert.throws(() => parseServeConfig(["--idle-timeout-seconds", "-1"], {}), /--idle-timeout-seconds/);
    });

    it("refuse to start with a headers timeout longer than the request timeout", async () => {
      await assert.rejects(startTestServer({ overrides: { headersTimeoutSeconds: 5, requestTimeoutSeconds: 2 } }), /--headers-timeout-seconds must not exceed/);
    });
  });

  describe("sizes", () => {
    let server: RunningServer;
    before(async () => (server = await startTestServer({ overrides: { maxHeaderBytes: 4096, maxBodyBytes: 1024 } })));
    after(() => server.close());

    const jwks = (headers: Array<[string, string]>) => exchange(server.port, { method: "GET", target: "/.well-known/jwks", headers }) as Promise<WireResponse>;

    it("answers headers over --max-header-bytes with 431 and an RFC 6749 error, and takes them under it", async () => {
      const over = await jwks([["x-pad", "a".repeat(5000)]]);
      assert.equal(over.status, 431);
      assert.equal(header(over, "content-type"), "application/json; charset=utf-8");
      assert.deepEqual(JSON.parse(over.body.toString()), { error: "invalid_request", error_description: "request headers exceed 4096 bytes" });
      assert.equal((await jwks([["x-pad", "a".repeat(3000)]])).status, 200);
      // Many small headers count together.
      assert.equal((await jwks(Array.from({ length: 300 }, (_, i): [string, string] => [`x-h${i}`, "0123456789"]))).status, 431);
    });

    it("refuses an HTTP/2 header list over the limit, first request of a connection or not, and the session goes on", async () => {
      const session = http2.connect(server.url);
      session.on("error", () => {});
      try {
        const send = (size: number) =>
          new Promise<number | string>((resolve) => {
            const req = session.request({ ":path": "/.well-known/jwks", "x-pad": "a".repeat(size) });
            req.on("response", (h) => resolve(Number(h[":status"])));
            req.on("error", () => resolve(`reset ${req.rstCode}`));
            req.on("data", () => {});
            req.end();
          });
        // Sent before the server's SETTINGS are acknowledged: the handler refuses it.
        assert.equal(await send(5000), 431);
        assert.equal(await send(100), 200);
        // Once they are, nghttp2 resets the stream itself.
        assert.equal(await send(5000), `reset ${http2.constants.NGHTTP2_ENHANCE_YOUR_CALM}`);
        assert.equal(await send(100), 200);
      } finally {
        session.destroy();
      }
    });

    it("answers a body over --max-body-bytes with 413 on REST and ResourceExhausted on Connect", async () => {
      const body = new TextEncoder().encode(`grant_type=client_credentials&pad=${"x".repeat(2000)}`);
      const rest = (await exchange(server.port, {
        method: "POST",
        target: "/api/login/oauth/access_token",
        headers: [["content-type", "application/x-www-form-urlencoded"], ["authorization", basicAuth(TEST_APP.clientId, TEST_APP.clientSecret)], ["content-length", String(body.length)]],
        body,
      })) as WireResponse;
      assert.equal(rest.status, 413);
      assert.equal(JSON.parse(rest.body.toString()).error, "invalid_request");
      const json = new TextEncoder().encode(JSON.stringify({ grantType: "client_credentials", scope: "x".repeat(2000) }));
      const rpc = (await exchange(server.port, {
        method: "POST",
        target: "/identity.v1.TokenService/Token",
        headers: [["content-type", "application/json"], ["content-length", String(json.length)]],
        body: json,
      })) as WireResponse;
      assert.equal(rpc.status, 429);
      assert.equal(JSON.parse(rpc.body.toString()).code, "resource_exhausted");
    });
  });

  describe("what waits server-side", () => {
    let server: RunningServer;
    before(async () => (server = await startTestServer()));
    after(() => server.close());

    it("refuses a state over 4096 characters, which would wait server-side while the user signs in", async () => {
      const at = async (length: number) => {
        const res = await fetch(authorizeUrl(server.url, { state: "s".repeat(length) }), { redirect: "manual" });
        return { status: res.status, error: new URL(res.headers.get("location") ?? "http://x/").searchParams.get("error") };
      };
      assert.deepEqual(await at(MAX_STATE_LENGTH), { status: 200, error: null });
      assert.deepEqual(await at(MAX_STATE_LENGTH + 1), { status: 303, error: "invalid_request" });
    });

  });

  describe("slow clients (slow-loris)", function () {
    this.timeout(REQUEST_TIMEOUT * 1000 + SLACK_MS + 15_000);
    let server: RunningServer;
    before(
      async () =>
        (server = await startTestServer({
          overrides: { headersTimeoutSeconds: HEADERS_TIMEOUT, requestTimeoutSeconds: REQUEST_TIMEOUT, idleTimeoutSeconds: IDLE_TIMEOUT },
        })),
    );
    after(() => server.close());

    it(`closes a connection that never sends a byte within the headers timeout (${HEADERS_TIMEOUT} s)`, async () => {
      const client = slowClient(server.port);
      const { received } = await closedWithin(client.closed, HEADERS_TIMEOUT * 1000 + SLACK_MS, "silent connection");
      assert.equal(received, "", "nothing to answer: it never said which protocol it speaks");
    });

    it(`answers 408 to headers trickling in a byte at a time, and closes, within the headers timeout`, async () => {
      const client = slowClient(server.port);
      const head = "GET /.well-known/jwks HTTP/1.1\r\nhost: x\r\nx-slow: ";
      client.socket.write(head);
      const trickle = setInterval(() => client.socket.writable && client.socket.write("a"), 200);
      try {
        const { received } = await closedWithin(client.closed, HEADERS_TIMEOUT * 1000 + SLACK_MS, "trickling headers");
        const answer = parseJsonError(received);
        assert.equal(answer.status, 408);
        assert.deepEqual(answer.body, { error: "invalid_request", error_description: "the request took too long to arrive" });
      } finally {
        clearInterval(trickle);
      }
    });

    it(`answers 408 to a body trickling in, and closes, within the request timeout (${REQUEST_TIMEOUT} s)`, async () => {
      const client = slowClient(server.port);
      client.socket.write(
        "POST /api/login/oauth/access_token HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 1000\r\n\r\ngrant_type=",
      );
      const trickle = setInterval(() => client.socket.writable && client.socket.write("x"), 200);
      try {
        const { received } = await closedWithin(client.closed, REQUEST_TIMEOUT * 1000 + SLACK_MS, "trickling body");
        assert.equal(parseJsonError(received).status, 408);
      } finally {
        clearInterval(trickle);
      }
    });

    it(`closes an HTTP/2 connection that goes quiet after its preface within the idle timeout (${IDLE_TIMEOUT} s)`, async () => {
      const client = slowClient(server.port);
      client.socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      client.socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])); // an empty SETTINGS frame
      await closedWithin(client.closed, IDLE_TIMEOUT * 1000 + SLACK_MS, "idle HTTP/2 session");
    });

    it("closes a connection stuck halfway through the HTTP/2 preface within the headers timeout", async () => {
      const client = slowClient(server.port);
      client.socket.write("PRI * HTTP/2.0\r\n");
      await closedWithin(client.closed, HEADERS_TIMEOUT * 1000 + SLACK_MS, "half a preface");
    });

    it("keeps serving ordinary requests meanwhile", async () => {
      const res = await fetch(`${server.url}/.well-known/jwks`);
      assert.equal(res.status, 200);
    });
  });
});
