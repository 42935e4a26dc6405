import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export interface OnePortServer {
  port: number;
  close(): Promise<void>;
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
  const h1 = http.createServer(handler as http.RequestListener);
  const h2 = http2.createServer(handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void);
  const sockets = new Set<net.Socket>();

  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isH2 && head.length < H2_PREFACE.length) return; // need more bytes to decide
      socket.off("data", onData);
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
    close: () =>
      new Promise<void>((resolve) => {
        front.close(() => resolve());
        h1.closeIdleConnections();
        for (const socket of sockets) socket.destroy();
      }),
  };
}
