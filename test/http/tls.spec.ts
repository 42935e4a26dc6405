import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { DEFAULT_CONNECTION_LIMITS, listenOnePort, type ConnectionLimits, type OnePortServer } from "./../../src/http/transport.js";
import { scaledMs } from "../support/deadline.js";

/** listenOnePort with TLS, on its own: protocol choice, limits and closing as in cleartext. */
describe("one-port transport over TLS", function () {
  this.timeout(20_000);
  let certFile: string;
  let keyFile: string;
  let cert: string;
  let server: OnePortServer | undefined;
  afterEach(() => server?.close());

  before(() => {
    const dir = mkdtempSync(join(tmpdir(), "identity-tls-"));
    certFile = join(dir, "server.crt");
    keyFile = join(dir, "server.key");
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", keyFile, "-out", certFile],
      { stdio: "ignore" },
    );
    cert = readFileSync(certFile, "utf8");
  });

  /** A server whose `/slow` waits for the test, and every other path answers with the protocol it came by. */
  async function start(limits: Partial<ConnectionLimits> = {}) {
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    server = await listenOnePort({
      handler: (req, res) => {
        if (req.url === "/slow") {
          arrived();
          void released.then(() => res.end("slow done"));
        } else if (req.method === "POST") {
          req.resume().on("end", () => res.end("posted"));
        } else res.end(`${req.httpVersion} ${(req.socket as tls.TLSSocket).encrypted === true}`);
      },
      host: "127.0.0.1",
      port: 0,
      limits: { ...DEFAULT_CONNECTION_LIMITS, ...limits },
      tls: { certFile, keyFile },
    });
    return { server, arrival, release };
  }

  function h2Request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string) {
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const stream = session.request(headers, { endStream: body === undefined });
      if (body !== undefined) stream.write(body); // and never ends: a trickle
      let status = 0;
      let data = "";
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.setEncoding("utf8").on("data", (c: string) => (data += c));
      stream.on("close", () => resolve({ status, body: data })).on("error", reject);
    });
  }

  function httpsGet(port: number, path: string): Promise<{ status: number; body: string; connection?: string }> {
    return new Promise((resolve, reject) => {
      https
        .get({ host: "127.0.0.1", port, path, ca: cert, agent: false }, (res) => {
          let body = "";
          res.setEncoding("utf8").on("data", (c: string) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode!, body, connection: res.headers.connection }));
        })
        .on("error", reject);
    });
  }

  it("exposes the certificate in use, and serves HTTP/1.1 and HTTP/2 chosen by ALPN", async () => {
    const { server } = await start();
    assert.match(server.tls!.leaf.fingerprint256, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.deepEqual(await httpsGet(server.port, "/"), { status: 200, body: "1.1 true", connection: "close" });
    const session = http2.connect(`https://127.0.0.1:${server.port}`, { ca: cert });
    try {
      assert.equal(session.alpnProtocol, undefined); // not yet connected
      assert.deepEqual(await h2Request(session, { ":path": "/" }), { status: 200, body: "2.0 true" });
      assert.equal(session.alpnProtocol, "h2");
    } finally {
      session.close();
    }
  });

  it("a TLS client offering no ALPN gets HTTP/1.1 (HTTP/2 over TLS is negotiated)", async () => {
    const { server } = await start();
    const plain = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: "127.0.0.1", port: server.port, ca: cert }, () => {
        assert.equal(socket.alpnProtocol, false);
        socket.end("GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
      });
      let text = "";
      socket.setEncoding("utf8").on("data", (c: string) => (text += c));
      socket.on("end", () => resolve(text)).on("error", reject);
    });
    assert.match(plain, /^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\n1\.1 true$/);
  });

  /** Milliseconds until the server closes a connection that sends nothing after `open`. */
  async function silentFor(open: () => net.Socket): Promise<number> {
    const socket = open();
    socket.on("error", () => {});
    socket.resume();
    const started = Date.now();
    await new Promise((resolve) => socket.once("close", resolve));
    return Date.now() - started;
  }

  it("cuts a connection silent in its handshake, or after it on HTTP/1.1 or HTTP/2, at the headers timeout", async () => {
    const { server } = await start({ headersTimeoutMs: 300, requestTimeoutMs: 1000, idleTimeoutMs: 60_000 });
    const waits = {
      handshake: await silentFor(() => net.connect(server.port, "127.0.0.1")),
      "http/1.1": await silentFor(() => tls.connect({ host: "127.0.0.1", port: server.port, ca: cert, ALPNProtocols: ["http/1.1"] })),
      h2: await silentFor(() => tls.connect({ host: "127.0.0.1", port: server.port, ca: cert, ALPNProtocols: ["h2"] })),
    };
    for (const [stage, waited] of Object.entries(waits)) assert.ok(waited >= 250 && waited < scaledMs(3000), `${stage}: cut after ${waited} ms`);
  });

  it("keeps the per-stream request deadline on HTTP/2: a body that trickles gets 408", async () => {
    const { server } = await start({ headersTimeoutMs: 200, requestTimeoutMs: 400 });
    const session = http2.connect(`https://127.0.0.1:${server.port}`, { ca: cert });
    try {
      const answer = await h2Request(session, { ":path": "/upload", ":method": "POST", "content-type": "text/plain" }, "a");
      assert.equal(answer.status, 408);
      assert.match(answer.body, /took too long to arrive/);
    } finally {
      session.close();
    }
  });

  it("on close, lets a request in flight finish with connection: close, and drops handshakes in progress at once", async () => {
    const slow = await start();
    const port = slow.server.port;
    const inFlight = httpsGet(port, "/slow");
    await slow.arrival;
    // A connection that opened TCP and says nothing: closing does not wait for it.
    const mute = net.connect(port, "127.0.0.1");
    await new Promise((resolve) => mute.once("connect", resolve));
    const muteClosed = new Promise((resolve) => mute.once("close", resolve));
    const closing = Date.now();
    const closed = slow.server.close(60_000);
    await muteClosed;
    // At once: well short of the minute's grace, however loaded the machine.
    assert.ok(Date.now() - closing < scaledMs(1000), "the handshake in progress was left to its timeout");
    slow.release();
    assert.deepEqual(await inFlight, { status: 200, body: "slow done", connection: "close" });
    await closed;
    server = undefined;
  });

  it("sends HTTP/2 clients GOAWAY while their open streams finish", async () => {
    const slow = await start();
    const session = http2.connect(`https://127.0.0.1:${slow.server.port}`, { ca: cert });
    const goaway = new Promise((resolve) => session.once("goaway", resolve));
    const answer = h2Request(session, { ":path": "/slow" });
    await slow.arrival;
    const closed = slow.server.close(60_000);
    await goaway;
    slow.release();
    assert.deepEqual(await answer, { status: 200, body: "slow done" });
    session.close();
    await closed;
    server = undefined;
  });
});
