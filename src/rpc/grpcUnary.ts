import type { IncomingMessage, ServerResponse } from "node:http";
import http2, { type Http2ServerResponse } from "node:http2";
import type { DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createServiceImplSpec, type ContextValues, type Interceptor, type MethodImplSpec } from "@connectrpc/connect";
import {
  createDeadlineSignal,
  createMethodSerializationLookup,
  encodeEnvelope,
  invokeUnaryImplementation,
  validateReadWriteMaxBytes,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
import { contentTypeJson, contentTypeProto, parseContentType, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { wellFormed } from "../oauth/errors.js";
import { annotateRequest, requestContextOf } from "../requestContext.js";
import { readRequestBody } from "../requestBody.js";
import { prepareForConnect } from "./adapterInput.js";
import { headerFields, plainHandlerContext } from "./handlerContext.js";
import type { ServiceBinding } from "./services.js";

export interface GrpcUnaryOptions {
  interceptors: Interceptor[];
  /** The largest request message, as Connect's `readMaxBytes`. */
  readMaxBytes: number;
  contextValues: (req: IncomingMessage) => ContextValues;
}

interface UnaryTarget {
  service: DescService;
  method: DescMethod;
  spec: MethodImplSpec<DescMessage, DescMessage> & { kind: "unary" };
  serialization: MethodSerializationLookup<DescMessage, DescMessage>;
}

/** One message on the wire: flag byte, 4-byte big-endian length, the message. */
const ENVELOPE_HEAD = 5;
const COMPRESSED_FLAG = 0b1;

/**
 * Unary gRPC calls over HTTP/2, served with Connect's own protocol pieces
 * (its content types, timeout parsing, serialization with read limits,
 * unary invocation with the interceptors, trailer status) but without its
 * streaming pipeline. Connect's gRPC handler treats every call as a stream:
 * a chain of async generators, a deadline signal and a linked abort
 * controller, and a DOMException when the call ends. For an introspection
 * that was over 80% of the server's busy CPU, several times the
 * implementation itself (docs/performance.md).
 *
 * Only the plain case is served here: HTTP/2, POST, `application/grpc`
 * (proto or JSON), no request compression, a unary method of ours.
 * Everything else (compressed requests, streaming methods, reflection,
 * gRPC-Web, the Connect protocol, unknown paths) falls through to Connect.
 * Responses are never compressed; gRPC lets a server answer with identity
 * whatever the caller accepts, and these messages are small.
 *
 * Returns false for a call it leaves to Connect.
 */
export function createGrpcUnaryDoor(bindings: readonly ServiceBinding[], options: GrpcUnaryOptions) {
  const limits = validateReadWriteMaxBytes(options.readMaxBytes, undefined, undefined);
  const targets = new Map<string, UnaryTarget>();
  for (const { service, impl } of bindings) {
    const specs = createServiceImplSpec(service, impl);
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      targets.set(`/${service.typeName}/${method.name}`, {
        service,
        method,
        spec: specs.methods[method.localName] as UnaryTarget["spec"],
        serialization: createMethodSerializationLookup(method, undefined, undefined, limits),
      });
    }
  }

  return function handleGrpcUnary(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    if (req.httpVersionMajor !== 2 || req.method !== "POST") return false;
    const target = targets.get(url.pathname);
    if (!target) return false;
    const type = parseContentType(req.headers["content-type"] ?? null);
    if (!type) return false;
    const encoding = req.headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    serve(target, type.binary, req, res, url).catch((err: unknown) => {
      // Node refused to send what the answer holds: the stream is reset, which callers read as Internal.
      annotateRequest(requestContextOf(req), { unexpected: err });
      (res as unknown as Http2ServerResponse).stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
    return true;
  };

  async function serve(target: UnaryTarget, binary: boolean, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const logContext = requestContextOf(req);
    prepareForConnect(req);
    const timeout = parseTimeout(headerValue(req, "grpc-timeout"), Number.MAX_SAFE_INTEGER);
    const deadline = timeout.timeoutMs === undefined ? undefined : createDeadlineSignal(timeout.timeoutMs);
    const ctx = plainHandlerContext({
      service: target.service,
      method: target.method,
      protocolName: "grpc",
      req,
      url,
      values: options.contextValues(req),
      deadline: deadline && { signal: deadline.signal, timeoutMs: timeout.timeoutMs! },
    });
    let body: Uint8Array | undefined;
    let failure: ConnectError | undefined;
    try {
      if (timeout.error) throw timeout.error;
      const input = parseInput(target, binary, await readOneEnvelope(req, options.readMaxBytes));
      const output = await invokeUnaryImplementation(target.spec, ctx, input, options.interceptors);
      body = encodeEnvelope(0, target.serialization.getO(binary).serialize(output));
    } catch (err) {
      // The interceptors have already mapped (and logged) the implementation's errors.
      if (err instanceof ConnectError) failure = err;
      else {
        annotateRequest(logContext, { unexpected: err });
        failure = new ConnectError("internal error", Code.Internal);
      }
    } finally {
      deadline?.cleanup();
    }
    const stream = (res as unknown as Http2ServerResponse).stream;
    if (stream.closed || stream.destroyed) return; // the caller cancelled; its log line says aborted
    const headers = headerFields(ctx.responseHeader, { "content-type": binary ? contentTypeProto : contentTypeJson });
    const trailer = headerFields(setTrailerStatus(ctx.responseTrailer, failure && wellFormedError(failure)));
    annotateRequest(logContext, { grpcStatus: trailer["grpc-status"] });
    res.writeHead(200, headers);
    res.addTrailers(trailer);
    res.end(body);
  }
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === "string" ? value : null;
}

/**
 * The call's single request message. Errors carry Connect's words and the
 * codes our Connect path answers with: a message over the limit is
 * ResourceExhausted, none or more than one Unimplemented, and bytes that do
 * not decode InvalidArgument (the caller's fault, see errorAnswers.ts).
 */
async function readOneEnvelope(req: IncomingMessage, readMaxBytes: number): Promise<Uint8Array> {
  const bytes = await readRequestBody(
    req,
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
