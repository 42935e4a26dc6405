import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export interface OnePortServer {
  port: number;
  /**
   * Stop accepting connections and let requests in flight finish, for at
   * most `graceMs`; connections still open then are cut.
   */
  close(graceMs?: number): Promise<void>;
  /** The HTTP/1.1 server, for its timeouts. */
  http1: http.Server;
  http2: http2.Http2Server;
}

/**
 * One port for both protocol families. The first bytes of a connection say
 * which: the HTTP/2 connection preface goes to the h2c server (gRPC), anything
 * else to HTTP/1.1 (REST, Connect, gRPC-Web, browsers).
 */
export async function listenOnePort(handler: Handler, host: string, port: number): Promise<OnePortServer> {
  const h1 = http.createServer();
  const h2 = http2.createServer();
  // The HTTP/1.1 server never listens itself, so tell it it does: only then
  // does it track its connections, which closeIdleConnections() and the
  // headers/request timeouts rely on.
  h1.emit("listening");

  let draining = false;
  const sockets = new Set<net.Socket>();
  const undecided = new Set<net.Socket>();
  const responses = new Set<http.ServerResponse>();
  const sessions = new Set<http2.ServerHttp2Session>();

  // While draining, every HTTP/1.1 response says `connection: close`, and a
  // connection is closed as soon as it has no request in flight.
  const closeIdleH1 = () => setImmediate(() => h1.closeIdleConnections());
  h1.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (draining) res.setHeader("connection", "close");
    responses.add(res);
    res.once("close", () => {
      responses.delete(res);
      if (draining) closeIdleH1();
    });
  });
  h1.on("request", handler as http.RequestListener);
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  h2.on("request", handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void);

  const front = net.createServer((socket) => {
    sockets.add(socket);
    undecided.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      undecided.delete(socket);
    });
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isH2 && head.length < H2_PREFACE.length) return; // need more bytes to decide
      socket.off("data", onData);
      undecided.delete(socket);
      socket.pause();
      socket.unshift(head);
      if (isH2) {
        // The h2 session reads what is buffered in the socket itself and then
        // takes over its handle; resuming here would hand those bytes to
        // nobody, and the session would start mid-preface.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(port, host, () => resolve());
  });
  const address = front.address() as net.AddressInfo;

  return {
    port: address.port,
    http1: h1,
    http2: h2,
    close: (graceMs = 0) =>
      new Promise<void>((resolve) => {
        draining = true;
        const deadline = setTimeout(() => {
          for (const socket of sockets) socket.destroy();
        }, graceMs);
        // Refuses new connections now; calls back once every accepted one has closed.
        front.close(() => {
          clearTimeout(deadline);
          resolve();
        });
        for (const socket of undecided) socket.destroy();
        for (const res of responses) if (!res.headersSent) res.setHeader("connection", "close");
        h1.close(); // closes idle connections and stops its timeout checks
        // GOAWAY: streams already open finish, new ones are refused.
        for (const session of sessions) session.close();
      }),
  };
}
