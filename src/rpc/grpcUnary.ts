import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import { create, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createServiceImplSpec, type ContextValues, type MethodImplSpec } from "@connectrpc/connect";
import {
  createDeadlineSignal,
  createMethodSerializationLookup,
  encodeEnvelope,
  validateReadWriteMaxBytes,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
import { contentTypeJson, contentTypeProto, parseContentType, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { RequestSource } from "../http/clientAddress.js";
import { wellFormed } from "../oauth/errors.js";
import { annotateRequest, type RequestContext } from "../http/requestContext.js";
import { readRequestBody } from "../http/requestBody.js";
import { dropUntimeableDeadlines } from "./adapterInput.js";
import { headerFields, plainHandlerContext } from "./handlerContext.js";
import type { ServiceBinding } from "./services.js";

export interface GrpcUnaryOptions {
  /** What a call's failure answers with: the mapping Connect's interceptor applies to the calls it serves. */
  toConnectError: (failure: unknown, context: RequestContext) => ConnectError;
  /** The largest request message, as Connect's `readMaxBytes`. */
  readMaxBytes: number;
  contextValues: (source: RequestSource, context: RequestContext) => ContextValues;
}

interface UnaryTarget {
  service: DescService;
  method: DescMethod;
  spec: MethodImplSpec<DescMessage, DescMessage> & { kind: "unary" };
  serialization: MethodSerializationLookup<DescMessage, DescMessage>;
  /** Whether the call is binary protobuf rather than JSON. */
  binary: boolean;
}

/** One message on the wire: flag byte, 4-byte big-endian length, the message. */
const ENVELOPE_HEAD = 5;
const COMPRESSED_FLAG = 0b1;

/**
 * Unary gRPC calls over HTTP/2, served on Node's HTTP/2 streams themselves
 * with Connect's own protocol pieces (its content types, timeout parsing,
 * serialization with read limits, trailer status). Three layers are left
 * out, each measured (docs/performance.md):
 * - Connect's gRPC handler, which treats every call as a stream: a chain of
 *   async generators, a deadline signal and a linked abort controller, and a
 *   DOMException when the call ends; for an introspection that was over 80%
 *   of the server's busy CPU;
 * - Node's HTTP/2 compatibility layer, whose request and response objects
 *   (two more streams over the stream) were about a tenth of what was left;
 * - Connect's interceptor chain: the implementation is called as the REST
 *   facade calls it, and a failure goes through the mapping of the
 *   interceptor Connect's own calls get.
 *
 * Only the plain case is claimed: POST, `application/grpc` (proto or JSON),
 * no request compression, a unary method of ours, the exact path. Everything
 * else (compressed requests, streaming methods, reflection, unknown paths)
 * goes on to the compatibility layer and Connect. Responses are never
 * compressed; gRPC lets a server answer with identity whatever the caller
 * accepts, and these messages are small.
 */
export function createGrpcUnaryDoor(bindings: readonly ServiceBinding[], options: GrpcUnaryOptions) {
  const limits = validateReadWriteMaxBytes(options.readMaxBytes, undefined, undefined);
  // Each method twice, for the two codecs: a claim hands out one of these rather than a new object per call.
  const targets = new Map<string, { proto: UnaryTarget; json: UnaryTarget }>();
  for (const { service, impl } of bindings) {
    const specs = createServiceImplSpec(service, impl);
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      const target = {
        service,
        method,
        spec: specs.methods[method.localName] as UnaryTarget["spec"],
        serialization: createMethodSerializationLookup(method, undefined, undefined, limits),
      };
      targets.set(`/${service.typeName}/${method.name}`, { proto: { ...target, binary: true }, json: { ...target, binary: false } });
    }
  }

  return {
    /** What a call is for when this door serves it; undefined leaves it to Connect. */
    claim(headers: IncomingHttpHeaders): UnaryTarget | undefined {
      if (headers[":method"] !== "POST") return undefined;
      const target = targets.get(headers[":path"] ?? "");
      if (!target) return undefined;
      const type = parseContentType(headers["content-type"] ?? null);
      if (!type) return undefined;
      const encoding = headers["grpc-encoding"];
      if (encoding !== undefined && encoding !== "identity") return undefined;
      return type.binary ? target.proto : target.json;
    },

    /** Answer a claimed call. The answer echoes the call's request id, as every answer of ours does. */
    serve(target: UnaryTarget, stream: ServerHttp2Stream, headers: IncomingHttpHeaders, context: RequestContext): void {
      answer(target, stream, headers, context).catch((err: unknown) => {
        // Node refused to send what the answer holds: the stream is reset, which callers read as Internal.
        annotateRequest(context, { unexpected: err });
        stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    },
  };

  async function answer(target: UnaryTarget, stream: ServerHttp2Stream, headers: IncomingHttpHeaders, context: RequestContext): Promise<void> {
    const { binary } = target;
    dropUntimeableDeadlines(headers);
    const timeout = parseTimeout(headerValue(headers, "grpc-timeout"), Number.MAX_SAFE_INTEGER);
    const deadline = timeout.timeoutMs === undefined ? undefined : createDeadlineSignal(timeout.timeoutMs);
    const ctx = plainHandlerContext({
      service: target.service,
      method: target.method,
      protocolName: "grpc",
      req: { method: "POST", headers },
      url: `http://${headers[":authority"] ?? "localhost"}${headers[":path"]}`,
      values: options.contextValues({ socket: stream.session?.socket ?? {}, headers }, context),
      deadline: deadline && { signal: deadline.signal, timeoutMs: timeout.timeoutMs! },
    });
    let body: Uint8Array | undefined;
    let failure: ConnectError | undefined;
    try {
      if (timeout.error) throw timeout.error;
      const input = parseInput(target, binary, await readOneEnvelope(stream, options.readMaxBytes));
      const output = create(target.method.output, await target.spec.impl(input, ctx));
      body = encodeEnvelope(0, target.serialization.getO(binary).serialize(output));
    } catch (err) {
      failure = options.toConnectError(err, context);
    } finally {
      deadline?.cleanup();
    }
    if (stream.closed || stream.destroyed) return; // the caller cancelled; its log line says aborted
    const responseHeaders = headerFields(ctx.responseHeader, {
      ":status": "200",
      "content-type": binary ? contentTypeProto : contentTypeJson,
      "x-request-id": context.requestId,
    });
    const trailer = headerFields(setTrailerStatus(ctx.responseTrailer, failure && wellFormedError(failure)));
    annotateRequest(context, { grpcStatus: trailer["grpc-status"] });
    stream.respond(responseHeaders, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(trailer));
    stream.end(body);
  }
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return typeof value === "string" ? value : null;
}

/**
 * The call's single request message. Errors carry Connect's words and the
 * codes our Connect path answers with: a message over the limit is
 * ResourceExhausted, none or more than one Unimplemented, and bytes that do
 * not decode InvalidArgument (the caller's fault, see errorAnswers.ts).
 */
async function readOneEnvelope(stream: ServerHttp2Stream, readMaxBytes: number): Promise<Uint8Array> {
  const bytes = await readRequestBody(
    stream,
    (chunks, size) => {
      if (size < ENVELOPE_HEAD) return undefined;
      const length = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)).readUInt32BE(1);
      if (length > readMaxBytes) return new ConnectError(`message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted);
      if (size >= 2 * ENVELOPE_HEAD + length) return new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);
      return undefined;
    },
    () => new ConnectError("the request ended before its message did", Code.Canceled),
  );
  if (bytes.length === 0) throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  // Short of its declared length, or trailed by less than another message's head.
  if (bytes.length < ENVELOPE_HEAD || bytes.length !== ENVELOPE_HEAD + bytes.readUInt32BE(1)) {
    throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  }
  if (bytes[0]! & COMPRESSED_FLAG) {
    throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.InvalidArgument);
  }
  return bytes.subarray(ENVELOPE_HEAD);
}

function parseInput(target: UnaryTarget, binary: boolean, bytes: Uint8Array) {
  try {
    return target.serialization.getI(binary).parse(bytes);
  } catch (err) {
    // Connect says Internal for protobuf it cannot parse: its reading code serves responses too.
    if (err instanceof ConnectError && err.code === Code.Internal) throw new ConnectError(err.rawMessage, Code.InvalidArgument);
    throw err;
  }
}

/** gRPC's message trailer is percent-encoded, which half a surrogate pair (quoted from a caller's text) cannot be. */
function wellFormedError(err: ConnectError): ConnectError {
  const message = wellFormed(err.rawMessage);
  if (message === err.rawMessage) return err;
  const copy = new ConnectError(message, err.code, err.metadata, undefined, err.cause);
  copy.details = err.details;
  return copy;
}
