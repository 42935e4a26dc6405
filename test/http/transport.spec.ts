import assert from "node:assert/strict";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { listenOnePort, type OnePortServer } from "./../../src/http/transport.js";

/** A server whose `/slow` requests wait until the test lets them answer. */
async function slowServer() {
  let arrived!: () => void;
  const arrival = new Promise<void>((resolve) => (arrived = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = await listenOnePort({
    handler: (req, res) => {
      if (req.url === "/slow") {
        arrived();
        void released.then(() => res.end("slow done"));
      } else res.end("fast");
    },
    host: "127.0.0.1",
    port: 0,
  });
  return { server, arrival, release };
}

function get(port: number, path: string, agent?: http.Agent): Promise<{ status: number; body: string; connection?: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, agent }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode!, body, connection: res.headers.connection }));
      })
      .on("error", reject);
  });
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

describe("one-port transport", () => {
  let server: OnePortServer | undefined;
  afterEach(() => server?.close());

  it("serves HTTP/2 with prior knowledge (h2c) and HTTP/1.1 on the same port", async () => {
    ({ server } = await slowServer());
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    const body = await new Promise<string>((resolve, reject) => {
      let data = "";
      const stream = session.request({ ":path": "/fast" });
      stream.setEncoding("utf8").on("data", (c) => (data += c));
      stream.on("end", () => resolve(data)).on("error", reject);
    });
    session.close();
    assert.equal(body, "fast");
    assert.equal((await get(server.port, "/fast")).body, "fast");
  });

  it("on close, lets a request in flight finish, refuses new connections and closes idle ones", async () => {
    const slow = await slowServer();
    server = slow.server;
    const agent = new http.Agent({ keepAlive: true });
    await get(server.port, "/fast", agent); // leaves an idle keep-alive connection
    const idle = Object.values(agent.freeSockets)[0]![0]!;
    const idleClosed = new Promise((resolve) => idle.once("close", resolve));

    const inFlight = get(server.port, "/slow");
    await slow.arrival;
    const closed = server.close(60_000);
    await idleClosed;
    assert.equal(await connects(server.port), false);
    slow.release();
    const res = await inFlight;
    assert.deepEqual(res, { status: 200, body: "slow done", connection: "close" });
    await closed; // every connection is gone, long before the bound
    agent.destroy();
  });

  it("cuts connections still busy when the bound is reached", async () => {
    const slow = await slowServer();
    server = slow.server;
    const inFlight = get(server.port, "/slow");
    await slow.arrival;
    await server.close(50);
    await assert.rejects(inFlight, /socket hang up|ECONNRESET/);
  });

  it("sends HTTP/2 clients GOAWAY while their open streams finish", async () => {
    const slow = await slowServer();
    server = slow.server;
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    const goaway = new Promise((resolve) => session.once("goaway", resolve));
    let data = "";
    const stream = session.request({ ":path": "/slow" });
    stream.setEncoding("utf8").on("data", (c) => (data += c));
    const ended = new Promise((resolve) => stream.on("end", resolve));
    await slow.arrival;
    const closed = server.close(60_000);
    await goaway;
    slow.release();
    await ended;
    assert.equal(data, "slow done");
    session.close();
    await closed;
  });
});
