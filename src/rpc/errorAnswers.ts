import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";

// connect-es's words for request bytes it could not decode: protobuf
// (protocol/serialization.js), the compressed flag without an encoding
// (protocol/envelope.js), a compressed body that does not decompress
// (connect-node compression.js).
const UNDECODABLE = /^(parse binary:|received compressed envelope, but do not know how to decompress|decompression failed)/;
const GRPC_INTERNAL = "13";
const GRPC_INVALID_ARGUMENT = "3";
const TRAILER_FRAME = 0x80;
const UNENCODABLE_MESSAGE = "the request could not be decoded and the reason quotes malformed text";

/**
 * Two corrections to connect-es's error answers, on every protocol.
 *
 * - It answers a request whose bytes do not decode (bad protobuf, a
 *   compressed flag without an encoding, a broken gzip body) with Internal,
 *   HTTP 500 on the Connect protocol: the same code paths read responses,
 *   where that is right. A server that cannot decode a request has been sent
 *   garbage, the caller's fault: InvalidArgument, as for undecodable JSON.
 * - A gRPC or gRPC-Web error whose message holds half a surrogate pair (a
 *   JSON parser quoting the request's text) makes its trailer encoding throw
 *   (encodeURIComponent), and the call then never ends. The status goes out
 *   with a message that can be sent instead.
 */
export function correctErrorAnswers(router: ConnectRouter): void {
  const handlers = router.handlers;
  handlers.splice(0, handlers.length, ...handlers.map(corrected));
}

function corrected(handler: UniversalHandler): UniversalHandler {
  const correctedHandler = async (req: UniversalServerRequest) => {
    let res: UniversalServerResponse;
    try {
      res = await handler(req);
    } catch (err) {
      if (!(err instanceof URIError)) throw err;
      return unencodableFailure(req.header.get("content-type") ?? "");
    }
    return relabel(res);
  };
  return Object.assign(correctedHandler, handler);
}

async function relabel(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  const type = res.header?.get("content-type") ?? "";
  if (res.status === 500 && type.startsWith("application/json")) return relabelConnect(res);
  if (type.startsWith("application/grpc-web")) {
    return { ...res, body: mapChunks(res.body, relabelGrpcWebTrailer, () => grpcWebTrailerFrame(GRPC_INVALID_ARGUMENT, UNENCODABLE_MESSAGE)) };
  }
  if (type.startsWith("application/grpc") && res.trailer) {
    const trailer = res.trailer;
    const onUnencodable = () => {
      trailer.set("grpc-message", encodeURIComponent(UNENCODABLE_MESSAGE));
      if (!trailer.has("grpc-status")) trailer.set("grpc-status", GRPC_INVALID_ARGUMENT);
      return undefined;
    };
    return { ...res, body: mapChunks(res.body, (chunk) => chunk, onUnencodable, () => relabelGrpcTrailer(trailer)) };
  }
  return res;
}

/** The Connect protocol's unary error: a JSON body and the HTTP status of its code. */
async function relabelConnect(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of bodyChunks(res.body)) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = JSON.parse(bytes.toString("utf8"));
  } catch {
    // not an error body we know
  }
  if (error?.code !== "internal" || typeof error.message !== "string" || !UNDECODABLE.test(error.message)) {
    return { ...res, body: bodyChunks(bytes) };
  }
  const body = Buffer.from(JSON.stringify({ code: "invalid_argument", message: error.message }));
  const header = new Headers(res.header);
  header.set("content-length", String(body.length));
  return { ...res, status: 400, header, body: bodyChunks(body) };
}

function relabelGrpcTrailer(trailer: Headers): void {
  if (trailer.get("grpc-status") === GRPC_INTERNAL && UNDECODABLE.test(unescape(trailer.get("grpc-message") ?? ""))) {
    trailer.set("grpc-status", GRPC_INVALID_ARGUMENT);
  }
}

/** gRPC-Web carries the trailer as the body's last frame: flag 0x80, then `name: value` lines. */
function relabelGrpcWebTrailer(chunk: Uint8Array): Uint8Array {
  if (chunk.length < 5 || !(chunk[0]! & TRAILER_FRAME)) return chunk;
  const trailer = new Headers();
  for (const line of Buffer.from(chunk.subarray(5)).toString("latin1").split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) trailer.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  if (trailer.get("grpc-status") !== GRPC_INTERNAL) return chunk;
  relabelGrpcTrailer(trailer);
  return trailerFrame(trailer, chunk[0]!);
}

function trailerFrame(trailer: Headers, flags = TRAILER_FRAME): Uint8Array {
  const text = Buffer.from([...trailer].map(([name, value]) => `${name}: ${value}\r\n`).join(""), "latin1");
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(text.length, 1);
  return Buffer.concat([head, text]);
}

const grpcWebTrailerFrame = (status: string, message: string) =>
  trailerFrame(new Headers({ "grpc-status": status, "grpc-message": encodeURIComponent(message) }));

/** The answer to a call whose failure could not be encoded before any byte of it was. */
function unencodableFailure(requestType: string): UniversalServerResponse {
  const message = encodeURIComponent(UNENCODABLE_MESSAGE);
  if (requestType.startsWith("application/grpc-web")) {
    return { status: 200, header: new Headers({ "content-type": requestType }), body: bodyChunks(grpcWebTrailerFrame(GRPC_INVALID_ARGUMENT, UNENCODABLE_MESSAGE)) };
  }
  return {
    status: 200,
    header: new Headers({ "content-type": requestType }),
    body: bodyChunks(undefined),
    trailer: new Headers({ "grpc-status": GRPC_INVALID_ARGUMENT, "grpc-message": message }),
  };
}

async function* bodyChunks(body: AsyncIterable<Uint8Array> | Uint8Array | undefined): AsyncIterable<Uint8Array> {
  if (body instanceof Uint8Array) yield body;
  else if (body !== undefined) yield* body;
}

/**
 * The body, chunk by chunk through `map`, then `atEnd` (when the trailer is
 * final). A URIError while reading it is the unencodable trailer: `onUnencodable`
 * may add a last chunk instead.
 */
async function* mapChunks(
  body: UniversalServerResponse["body"],
  map: (chunk: Uint8Array) => Uint8Array,
  onUnencodable: () => Uint8Array | undefined,
  atEnd: () => void = () => {},
): AsyncIterable<Uint8Array> {
  try {
    for await (const chunk of bodyChunks(body)) yield map(chunk);
  } catch (err) {
    if (!(err instanceof URIError)) throw err;
    const last = onUnencodable();
    if (last) yield last;
  }
  atEnd();
}
