import net from "node:net";

/** One HTTP/1.1 request, byte for byte as the fuzzer wants it on the wire. */
export interface WireRequest {
  method: string;
  /** Path and query, sent as is (it may be malformed on purpose). */
  target: string;
  /** Sent in this order; a name may repeat. Values may hold any character. */
  headers: Array<[string, string]>;
  body?: Uint8Array;
  /**
   * Send only this many bytes of the body, then half-close: a client that
   * goes away mid-request. Such a request may get no answer at all.
   */
  cutBodyAt?: number;
  /** An HTTP/1.0 request without Host (allowed there), instead of HTTP/1.1. */
  http10?: boolean;
}

export interface WireResponse {
  status: number;
  /** Lower-case names; repeated headers keep every value. */
  headers: Map<string, string[]>;
  body: Buffer;
}

export const header = (res: WireResponse, name: string): string | undefined => res.headers.get(name)?.[0];

/**
 * Send `request` on a fresh connection (`connection: close`) and read the
 * whole answer. Resolves "closed" when the server closes without answering,
 * and rejects when nothing happens within `timeoutMs` (a hang is a failure).
 */
export function exchange(port: number, request: WireRequest, timeoutMs = 60_000): Promise<WireResponse | "closed"> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: ${request.method} ${request.target.slice(0, 200)}`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    // A reset after a complete answer (the server closing while we still send) is not a failure.
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      if (raw.length === 0) return resolve("closed");
      try {
        resolve(parseResponse(raw));
      } catch (err) {
        reject(new Error(`unparseable answer to ${request.method} ${request.target.slice(0, 200)}: ${(err as Error).message}: ${raw.subarray(0, 300).toString("latin1")}`));
      }
    });
    socket.on("connect", () => {
      const body = request.body ?? new Uint8Array();
      const head =
        `${request.method} ${request.target} ${request.http10 ? "HTTP/1.0\r\n" : `HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`}` +
        request.headers.map(([name, value]) => `${name}: ${value}\r\n`).join("") +
        "connection: close\r\n\r\n";
      socket.write(Buffer.from(head, "utf8"));
      if (request.cutBodyAt !== undefined) {
        socket.end(body.subarray(0, request.cutBodyAt));
      } else if (body.length > 0) {
        socket.write(body);
      }
    });
  });
}

function parseResponse(raw: Buffer): WireResponse {
  // Interim answers (100 Continue) come first; the final one follows.
  while (/^HTTP\/1\.[01] 1\d\d/.test(raw.subarray(0, 12).toString("latin1")) && raw.indexOf("\r\n\r\n") >= 0) {
    raw = raw.subarray(raw.indexOf("\r\n\r\n") + 4);
  }
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) throw new Error("no end of headers");
  const [statusLine, ...lines] = raw.subarray(0, end).toString("latin1").split("\r\n");
  const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine ?? "");
  if (!match) throw new Error(`bad status line ${JSON.stringify(statusLine)}`);
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`bad header line ${JSON.stringify(line)}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  let body = raw.subarray(end + 4);
  if (headers.get("transfer-encoding")?.[0]?.toLowerCase() === "chunked") body = dechunk(body, headers);
  else if (headers.has("content-length")) body = body.subarray(0, Number(headers.get("content-length")![0]));
  return { status: Number(match[1]), headers, body };
}

/** The body of a chunked answer; its trailers (gRPC's status) join the headers. */
function dechunk(data: Buffer, headers: Map<string, string[]>): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd < 0) throw new Error("truncated chunked body");
    const size = parseInt(data.subarray(at, lineEnd).toString("latin1"), 16);
    if (Number.isNaN(size)) throw new Error("bad chunk size");
    if (size === 0) {
      for (const line of data.subarray(lineEnd + 2).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), [line.slice(colon + 1).trim()]);
      }
      return Buffer.concat(parts);
    }
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
