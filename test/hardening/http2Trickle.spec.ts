import assert from "node:assert/strict";
import http2 from "node:http2";
import type { RunningServer } from "../../src/app/server.js";
import { DEFAULT_CONNECTION_LIMITS, listenOnePort } from "../../src/http/transport.js";
import { basicAuth, startTestServer, TEST_APP } from "../support/server.js";
import { loadFactor, scaledMs } from "../support/deadline.js";

/** The deadline under test, in seconds: the smallest --request-timeout-seconds takes but one. */
const REQUEST_TIMEOUT = 2;
/** How late the cut may come on a busy machine: two seconds idle, more under load. */
const SLACK_MS = scaledMs(2000);
/** One byte of body every this many milliseconds: each resets the HTTP/2 idle timer. */
const TRICKLE_MS = 150;

interface Cut {
  /** The :status answered before the stream closed, if any. */
  status?: number;
  grpcStatus?: string;
  /** RST_STREAM code, when the server reset the stream. */
  rstCode?: number;
  afterMs: number;
  bytesSent: number;
}

/**
 * One request on its own h2c session: the headers at once, then a body one
 * byte at a time, never finished. Resolves when the server ends the stream,
 * or with `afterMs: Infinity` once `giveUpMs` has passed.
 */
function trickle(url: string, headers: http2.OutgoingHttpHeaders, head: Buffer, giveUpMs: number): Promise<Cut> {
  const session = http2.connect(url);
  session.on("error", () => {});
  const opened = Date.now();
  const stream = session.request({ ":method": "POST", ...headers }, { endStream: false });
  const cut: Cut = { afterMs: Infinity, bytesSent: head.length };
  stream.on("response", (h) => {
    cut.status = Number(h[":status"]);
    if (h["grpc-status"] !== undefined) cut.grpcStatus = String(h["grpc-status"]);
  });
  stream.on("trailers", (t) => {
    if (t["grpc-status"] !== undefined) cut.grpcStatus = String(t["grpc-status"]);
  });
  stream.on("data", () => {});
  stream.on("error", () => {});
  stream.write(head);
  const timer = setInterval(() => {
    if (stream.writable) {
      stream.write("x");
      cut.bytesSent++;
    }
  }, TRICKLE_MS);
  return new Promise((resolve) => {
    const done = () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      session.destroy();
      resolve(cut);
    };
    const giveUp = setTimeout(done, giveUpMs);
    stream.once("close", () => {
      cut.afterMs = Date.now() - opened;
      if (stream.rstCode) cut.rstCode = stream.rstCode;
      done();
    });
  });
}

/** Latencies (ms) of plain requests sent one after another until `until` settles. */
async function latencies(url: string, until: Promise<unknown> | number): Promise<number[]> {
  let over = false;
  if (typeof until === "number") setTimeout(() => (over = true), until);
  else void until.then(() => (over = true));
  const samples: number[] = [];
  while (!over) {
    const started = performance.now();
    const res = await fetch(`${url}/api/login/oauth/access_token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
      body: "grant_type=client_credentials",
    });
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    samples.push(performance.now() - started);
  }
  return samples;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe("HTTP/2 request trickled byte by byte", function () {
  this.timeout(30_000 + 2 * SLACK_MS);
  let server: RunningServer;
  before(async () => {
    // The idle timeout stays long: every trickled byte would reset it anyway.
    server = await startTestServer({ overrides: { headersTimeoutSeconds: 1, requestTimeoutSeconds: REQUEST_TIMEOUT, idleTimeoutSeconds: 120 } });
  });
  after(() => server.close());

  it("cuts a body trickled on an HTTP/2 stream at the request timeout, on every door, while other clients keep their latency", async () => {
    const bound = REQUEST_TIMEOUT * 1000 + SLACK_MS;
    const giveUp = bound + 3000;
    const baseline = await latencies(server.url, 1000);

    const envelope = Buffer.alloc(5);
    envelope.writeUInt32BE(200, 1); // a 200-byte message is announced, and never finishes
    const attacks = Promise.all([
      // The unary gRPC door, which reads the stream itself.
      trickle(server.url, { ":path": "/identity.v1.TokenService/Token", "content-type": "application/grpc", te: "trailers" }, envelope, giveUp),
      // Connect's adapter, through Node's compatibility layer.
      trickle(server.url, { ":path": "/identity.v1.TokenService/Token", "content-type": "application/json" }, Buffer.from('{"grantType":"'), giveUp),
      // The REST facade over h2c, through the same layer.
      trickle(
        server.url,
        { ":path": "/api/login/oauth/access_token", "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
        Buffer.from("grant_type="),
        giveUp,
      ),
    ]);
    const during = await latencies(server.url, attacks);
    const [grpc, connect, rest] = await attacks;

    for (const [door, cut] of Object.entries({ grpc, connect, rest })) {
      assert.ok(cut.afterMs <= bound, `${door}: still open after ${giveUp} ms (${cut.bytesSent} bytes trickled)`);
      assert.ok(cut.afterMs >= REQUEST_TIMEOUT * 1000 - 100, `${door}: cut after ${cut.afterMs} ms, before the deadline`);
    }
    // gRPC callers read DEADLINE_EXCEEDED; everyone else gets 408 with an RFC 6749 error.
    assert.equal(grpc.status, 200);
    assert.equal(grpc.grpcStatus, "4");
    assert.equal(connect.status, 408);
    assert.equal(rest.status, 408);

    // The other clients: no request waited on the trickles.
    const report = `baseline median ${median(baseline).toFixed(1)} ms (${baseline.length}), during median ${median(during).toFixed(1)} ms, max ${Math.max(...during).toFixed(1)} ms (${during.length})`;
    if (process.env.TRICKLE_FIGURES) console.log(`      ${report}`);
    // On a loaded machine each request takes longer, the baseline's too: fewer fit in the deadline, and the worst is later.
    assert.ok(during.length >= Math.max(3, Math.floor(10 / loadFactor())), report);
    assert.ok(median(during) <= median(baseline) * 3 + 20, report);
    assert.ok(Math.max(...during) < scaledMs(1000), report);
  });

  it("leaves the session of a cut stream serving its other requests", async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    try {
      const call = (path: string, body?: string) =>
        new Promise<number>((resolve, reject) => {
          const req = session.request(
            { ":method": body === undefined ? "GET" : "POST", ":path": path, "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
            { endStream: body === undefined },
          );
          let status = 0;
          req.on("response", (h) => (status = Number(h[":status"])));
          req.on("data", () => {});
          req.on("close", () => resolve(status));
          req.on("error", reject);
          if (body !== undefined) req.end(body);
        });
      // A stream cut on this session first.
      const cut = await new Promise<number>((resolve) => {
        const req = session.request({ ":method": "POST", ":path": "/api/login/oauth/access_token", "content-type": "application/x-www-form-urlencoded" }, { endStream: false });
        let status = 0;
        req.on("response", (h) => (status = Number(h[":status"])));
        req.on("data", () => {});
        req.on("error", () => {});
        req.on("close", () => resolve(status));
        req.write("grant_type=");
      });
      assert.equal(cut, 408);
      assert.equal(await call("/api/login/oauth/access_token", "grant_type=client_credentials"), 200);
      assert.equal(await call("/.well-known/jwks"), 200);
    } finally {
      session.destroy();
    }
  });

  it("never cuts a request whose body has arrived, however long its answer takes", async () => {
    const limits = { ...DEFAULT_CONNECTION_LIMITS, headersTimeoutMs: 200, requestTimeoutMs: 300 };
    const slow = await listenOnePort({
      handler: (req, res) => {
        req.resume();
        req.on("end", () => setTimeout(() => res.end("late"), 900));
      },
      host: "127.0.0.1",
      port: 0,
      limits,
    });
    const session = http2.connect(`http://127.0.0.1:${slow.port}`);
    session.on("error", () => {});
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = session.request({ ":method": "POST", ":path": "/" }, { endStream: false });
        let status = 0;
        let body = "";
        req.on("response", (h) => (status = Number(h[":status"])));
        req.setEncoding("utf8").on("data", (c: string) => (body += c));
        req.on("close", () => resolve({ status, body }));
        req.on("error", reject);
        req.end("all of it");
      });
      assert.deepEqual(answer, { status: 200, body: "late" });
    } finally {
      session.destroy();
      await slow.close();
    }
  });
});
