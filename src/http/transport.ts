import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import tls from "node:tls";
import { DEFAULT_TLS_RELOAD_MS, readKeyPair, watchKeyPair, type KeyPair, type TlsFiles } from "./tls.js";

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;
/** Serves an HTTP/2 stream itself and says so, or returns false to leave it to `Handler`. */
type StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** Bounds on what one connection may cost the server: header size and how long it may dawdle. */
export interface ConnectionLimits {
  /** Largest request header block (HTTP/1.1 request line and headers; HTTP/2 header list). */
  maxHeaderBytes: number;
  /** Longest wait for a connection's first bytes, and for a complete HTTP/1.1 header block. */
  headersTimeoutMs: number;
  /**
   * Longest a request may take to arrive, body included: on HTTP/1.1 from its
   * first byte, on HTTP/2 from its complete header block (the header block
   * itself is bounded by `maxHeaderBytes` and the idle timeout).
   */
  requestTimeoutMs: number;
  /** An HTTP/2 session with no traffic for this long is closed. */
  idleTimeoutMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxHeaderBytes: 16384,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
};

/** HTTPS on the port: a certificate and key, re-read while serving. */
export interface TlsOptions extends TlsFiles {
  /** How often the files are read for a change (default DEFAULT_TLS_RELOAD_MS). */
  reloadIntervalMs?: number;
  /** A changed pair now serves new connections. */
  onReload?: (pair: KeyPair) => void;
  /** A changed pair was unusable; the one in use stays. */
  onReloadError?: (err: Error) => void;
}

export interface OnePortServer {
  port: number;
  /** The certificate new TLS connections get; undefined without TLS. */
  tls?: KeyPair;
  /**
   * Stop accepting connections and let requests in flight finish, for at
   * most `graceMs`; connections still open then are cut.
   */
  close(graceMs?: number): Promise<void>;
  /** The HTTP/1.1 server, for its timeouts. */
  http1: http.Server;
  http2: http2.Http2Server;
}

/** What listenOnePort serves, where, and under which bounds. */
export interface OnePortOptions {
  handler: Handler;
  host: string;
  port: number;
  limits?: ConnectionLimits;
  /** Serves HTTP/2 streams before the compatibility layer (the unary gRPC door); none by default. */
  streamHandler?: StreamHandler;
  /** HTTPS with ALPN instead of cleartext. */
  tls?: TlsOptions;
}

/** Whether the port is closing: set once by close(), read by every server on it. */
interface Draining {
  now: boolean;
}

/**
 * One port for both protocol families. In cleartext the first bytes of a
 * connection say which: the HTTP/2 connection preface goes to the h2c server
 * (gRPC), anything else to HTTP/1.1 (REST, Connect, gRPC-Web, browsers).
 * With `tls`, the port speaks only TLS and the protocol the handshake
 * negotiated picks the same two servers: ALPN `h2` the HTTP/2 one, `http/1.1`
 * or none HTTP/1.1 (HTTP/2 over TLS is negotiated, RFC 9113 §3.2), so every
 * limit below holds on both.
 */
export async function listenOnePort(options: OnePortOptions): Promise<OnePortServer> {
  const limits = options.limits ?? DEFAULT_CONNECTION_LIMITS;
  const draining: Draining = { now: false };
  const h1 = http1Server(options.handler, limits, draining);
  const { h2, sessions } = http2Server(options.handler, limits, options.streamHandler ?? (() => false));
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const front = options.tls ? await tlsFront(options.tls, limits, h1, h2, draining, track) : cleartextFront(limits, h1, h2, track);

  await new Promise<void>((resolve, reject) => {
    front.server.once("error", (err) => {
      front.stop();
      reject(err);
    });
    front.server.listen(options.port, options.host, () => resolve());
  });
  const address = front.server.address() as net.AddressInfo;

  return {
    port: address.port,
    get tls() {
      return front.keyPair();
    },
    http1: h1,
    http2: h2,
    close: (graceMs = 0) =>
      new Promise<void>((resolve) => {
        draining.now = true;
        front.stop();
        const deadline = setTimeout(() => {
          for (const socket of sockets) socket.destroy();
        }, graceMs);
        // Refuses new connections now; calls back once every accepted one has closed.
        front.server.close(() => {
          clearTimeout(deadline);
          resolve();
        });
        front.dropUndecided();
        h1.close(); // closes idle connections and stops its timeout checks
        // GOAWAY: streams already open finish, new ones are refused.
        for (const session of sessions) session.close();
      }),
  };
}

/** The HTTP/1.1 server: it never listens itself; the front hands it connections. */
function http1Server(handler: Handler, limits: ConnectionLimits, draining: Draining): http.Server {
  // While draining, every HTTP/1.1 response says `connection: close`. The
  // check sits where the headers are written instead of in a Set of the
  // responses in flight: an entry added and deleted per request made V8
  // promote every request's objects to the old generation once a full
  // collection had run (docs/performance.md).
  class ClosingWhenDraining extends http.ServerResponse {
    override writeHead(...args: unknown[]): this {
      if (draining.now && !this.headersSent) this.setHeader("connection", "close");
      return (super.writeHead as (...passed: unknown[]) => this).apply(this, args);
    }
  }
  const h1 = http.createServer({
    ServerResponse: ClosingWhenDraining,
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // How often the two timeouts above are checked: the slack on them.
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  });
  // Tell it it listens: only then does it track its connections, which the
  // header and request timeouts and closeIdleConnections() rely on.
  h1.emit("listening");
  h1.on("clientError", answerClientError(limits));
  // Node would answer an Expect other than 100-continue with a bare 417.
  h1.on("checkExpectation", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.shouldKeepAlive = false;
    res.writeHead(417, JSON_ERROR_HEADERS).end(oauthErrorJson("the Expect header names an expectation this server does not support"));
  });
  // While draining, a connection is closed as soon as it has no request in
  // flight (one whose answer went out before draining began stays open).
  const closeIdleWhenDraining = () => {
    if (draining.now) setImmediate(() => h1.closeIdleConnections());
  };
  h1.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.on("close", closeIdleWhenDraining);
  });
  h1.on("request", handler as http.RequestListener);
  return h1;
}

/** The HTTP/2 server (h2c, or h2 over TLS), and its open sessions. */
function http2Server(handler: Handler, limits: ConnectionLimits, streamHandler: StreamHandler) {
  const h2 = http2.createServer({ settings: { maxHeaderListSize: limits.maxHeaderBytes } });
  h2.setTimeout(limits.idleTimeoutMs); // an idle session is destroyed
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (session.encrypted) {
      // Over TLS the preface comes after the handshake, not before the
      // session: it gets the headers timeout the sniffer gives h2c.
      session.setTimeout(limits.headersTimeoutMs);
      session.once("remoteSettings", () => session.setTimeout(limits.idleTimeoutMs));
    }
  });
  // Streams go to `streamHandler` first, as they come. Those it leaves get
  // Node's compatibility layer (request and response objects, as HTTP/1.1
  // has), from a second HTTP/2 server that never listens: the layer hooks
  // every stream of the server whose `request` event has a listener, and
  // its objects cost a gRPC introspection's main thread (docs/performance.md).
  const compat = http2.createServer();
  h2.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    // A caller's reset comes as an error event, thrown if nothing listens;
    // the stream's close tells whoever serves it.
    stream.on("error", ignoreStreamError);
    // The setting makes nghttp2 reset streams whose header list is too large,
    // but only once the client has acknowledged it: a connection's first
    // request may come before that, so the check is made here too.
    if (headerListSize(rawHeaders) > limits.maxHeaderBytes) {
      if (stream.closed || stream.destroyed) return; // reset by the caller already: respond would throw
      stream.respond({ ":status": 431, ...JSON_ERROR_HEADERS });
      stream.end(oauthErrorJson(`request headers exceed ${limits.maxHeaderBytes} bytes`));
    } else {
      // A body still to come must come within the request timeout: each
      // DATA frame resets the idle timer, so a trickle would never end.
      if (!(flags & http2.constants.NGHTTP2_FLAG_END_STREAM)) requestDeadline(stream, headers, limits.requestTimeoutMs);
      if (!streamHandler(stream, headers)) compat.emit("stream", stream, headers, flags, rawHeaders);
    }
  });
  compat.on("request", handler);
  return { h2, sessions };
}

/** The listening socket, and what closing it must also stop. */
interface Front {
  server: net.Server;
  /** The certificate new connections get; undefined in cleartext. */
  keyPair(): KeyPair | undefined;
  /** Stop watching the certificate files. */
  stop(): void;
  /** Drop connections that have not yet said (or negotiated) their protocol. */
  dropUndecided(): void;
}

/** Cleartext: a connection's first bytes pick HTTP/2 (the preface) or HTTP/1.1. */
function cleartextFront(limits: ConnectionLimits, h1: http.Server, h2: http2.Http2Server, track: (socket: net.Socket) => void): Front {
  const undecided = new Set<net.Socket>();
  const sniff = (socket: net.Socket) => {
    undecided.add(socket);
    socket.once("close", () => undecided.delete(socket));
    // A connection that never says which protocol it speaks holds a socket for nothing.
    socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isH2 && head.length < H2_PREFACE.length) return; // need more bytes to decide
      socket.off("data", onData);
      undecided.delete(socket);
      socket.setTimeout(0); // each server keeps its own time from here
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
  };
  const server = net.createServer((socket) => {
    track(socket);
    sniff(socket);
  });
  return {
    server,
    keyPair: () => undefined,
    stop: () => {},
    dropUndecided: () => {
      for (const socket of undecided) socket.destroy();
    },
  };
}

/** TLS: the protocol ALPN negotiated picks the server; the certificate pair is re-read while serving. */
async function tlsFront(
  options: TlsOptions,
  limits: ConnectionLimits,
  h1: http.Server,
  h2: http2.Http2Server,
  draining: Draining,
  track: (socket: net.Socket) => void,
): Promise<Front> {
  let keyPair = await readKeyPair(options);
  // TCP connections still in their TLS handshake, by peer address: the TLS
  // server hands over a new socket, on which the same peer address and port
  // find the connection again.
  const handshaking = new Map<string, net.Socket>();
  const peerOf = (socket: net.Socket) => `${socket.remoteAddress}|${socket.remotePort}`;
  const serverOptions = (pair: KeyPair): tls.TlsOptions => ({ cert: pair.cert, key: pair.key, ALPNProtocols: ["h2", "http/1.1"] });
  const server = tls.createServer(
    // The handshake is part of "a connection's first bytes".
    { ...serverOptions(keyPair), handshakeTimeout: limits.headersTimeoutMs },
    (socket) => {
      handshaking.delete(peerOf(socket));
      if (draining.now) socket.destroy();
      else if (socket.alpnProtocol === "h2") h2.emit("connection", socket);
      else h1.emit("connection", socket);
    },
  );
  server.on("connection", (socket: net.Socket) => {
    track(socket);
    const peer = peerOf(socket);
    handshaking.set(peer, socket);
    socket.once("close", () => handshaking.get(peer) === socket && handshaking.delete(peer));
  });
  // A failed or timed-out handshake: nothing to answer. The TLS server
  // leaves the socket open, the handshake timeout's included.
  server.on("tlsClientError", (_err: Error, socket: tls.TLSSocket) => socket.destroy());
  const watch = watchKeyPair(
    options,
    keyPair,
    options.reloadIntervalMs ?? DEFAULT_TLS_RELOAD_MS,
    (pair) => {
      // New handshakes use it; connections already open keep theirs.
      server.setSecureContext(serverOptions(pair));
      keyPair = pair;
      options.onReload?.(pair);
    },
    (err) => options.onReloadError?.(err),
  );
  return {
    server,
    keyPair: () => keyPair,
    stop: () => watch.stop(),
    dropUndecided: () => {
      for (const socket of handshaking.values()) socket.destroy();
    },
  };
}

/**
 * Requests refused by the HTTP/1.1 parser or its timeouts, before any route
 * sees them, still get an RFC 6749 error body instead of Node's bare status.
 */
function answerClientError(limits: ConnectionLimits) {
  return (err: NodeJS.ErrnoException, socket: net.Socket) => {
    const started = (socket as net.Socket & { _httpMessage?: http.ServerResponse })._httpMessage?.headersSent;
    if (err.code === "ECONNRESET" || !socket.writable || started) {
      socket.destroy();
      return;
    }
    const [status, description] =
      err.code === "HPE_HEADER_OVERFLOW"
        ? [431, `request headers exceed ${limits.maxHeaderBytes} bytes`]
        : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? [408, "the request took too long to arrive"]
          : [400, "malformed HTTP request"];
    const body = oauthErrorJson(description);
    const headers = { ...JSON_ERROR_HEADERS, "content-length": Buffer.byteLength(body), connection: "close" };
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n${body}`,
    );
  };
}

const ignoreStreamError = () => {};

/**
 * Ends a stream whose request has not fully arrived `ms` after its headers,
 * whoever serves it: the unary gRPC door reading the stream itself, or
 * Node's compatibility layer under the REST facade and Connect. One timer per
 * stream with a body, cleared when the stream closes; a GET, whose headers
 * end the request, has none.
 */
function requestDeadline(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ms: number): void {
  const timer = setTimeout(cutSlowRequest, ms, stream, headers);
  stream.once("close", () => clearTimeout(timer));
}

/**
 * The request timeout's answer on HTTP/2. A stream whose request did arrive
 * (the client half-closed it) is left alone, however long its answer takes.
 * Otherwise, if no answer has begun, gRPC callers get DEADLINE_EXCEEDED and
 * everyone else the 408 HTTP/1.1 gives; then RST_STREAM(NO_ERROR) once the
 * answer is out (RFC 9113 §8.1: the rest of the request is not wanted). A
 * stream already answering (a streaming call) is reset with CANCEL.
 */
function cutSlowRequest(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  if (stream.destroyed || stream.closed || stream.state.remoteClose) return;
  if (stream.headersSent) {
    stream.close(http2.constants.NGHTTP2_CANCEL);
    return;
  }
  const description = "the request took too long to arrive";
  if (headers["content-type"]?.startsWith("application/grpc")) {
    stream.respond(
      { ":status": 200, "content-type": headers["content-type"], "grpc-status": GRPC_DEADLINE_EXCEEDED, "grpc-message": encodeURIComponent(description) },
      { endStream: true },
    );
  } else {
    const body = oauthErrorJson(description);
    stream.respond({ ":status": 408, ...JSON_ERROR_HEADERS, "content-length": Buffer.byteLength(body) });
    stream.end(body);
  }
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

const GRPC_DEADLINE_EXCEEDED = "4";

/** RFC 9113 §6.5.2: each field counts its name, its value and 32 octets. */
function headerListSize(rawHeaders: string[]): number {
  let size = 0;
  for (const field of rawHeaders) size += Buffer.byteLength(field);
  return size + (rawHeaders.length / 2) * 32;
}

const JSON_ERROR_HEADERS = { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" };

const oauthErrorJson = (description: string) => JSON.stringify({ error: "invalid_request", error_description: description });
