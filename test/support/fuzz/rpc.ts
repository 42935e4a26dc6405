import http2 from "node:http2";
import { create, ScalarType, toBinary, toJsonString, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { contentTypeArb, valueFor } from "./http.js";
import { hostileString, type KnownValues } from "./values.js";

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

function scalarArb(field: DescField & { fieldKind: "scalar" | "list" }, known: KnownValues): fc.Arbitrary<unknown> {
  const scalar = field.fieldKind === "scalar" ? field.scalar : field.listKind === "scalar" ? field.scalar : ScalarType.STRING;
  if (scalar === ScalarType.STRING) return valueFor(field.name, known);
  if (scalar === ScalarType.BOOL) return fc.boolean();
  if (scalar === ScalarType.BYTES) return fc.uint8Array({ maxLength: 64 });
  if (scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT) return fc.double();
  if (INT64.has(scalar)) return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => (scalar === ScalarType.UINT64 || scalar === ScalarType.FIXED64 ? (n < 0n ? -n : n) : n));
  if (scalar === ScalarType.UINT32 || scalar === ScalarType.FIXED32) return fc.nat();
  return fc.integer();
}

/** A well-typed message init with hostile values: decodes fine, then must be refused (or served) properly. */
export function messageInitArb(schema: DescMessage, known: KnownValues, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of schema.fields) {
    if (field.fieldKind === "scalar") shape[field.localName] = scalarArb(field, known);
    else if (field.fieldKind === "list" && field.listKind === "scalar") shape[field.localName] = fc.array(scalarArb(field, known), { maxLength: 5 });
    else if (field.fieldKind === "message" && depth < 2) shape[field.localName] = messageInitArb(field.message, known, depth + 1);
    else if (field.fieldKind === "enum") shape[field.localName] = fc.integer({ min: 0, max: 5 });
  }
  return fc.record(shape, { requiredKeys: [] });
}

/** Protobuf binary: valid encodings of hostile values, garbage, and valid encodings cut short or padded. */
export function binaryMessageArb(schema: DescMessage, known: KnownValues): fc.Arbitrary<Uint8Array> {
  const valid = messageInitArb(schema, known).map((init) => toBinary(schema, create(schema, init as never)));
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 256 }) },
    { weight: 1, arbitrary: valid.chain((b) => fc.nat({ max: b.length }).map((n) => b.subarray(0, n))) },
    { weight: 1, arbitrary: fc.tuple(valid, fc.uint8Array({ minLength: 1, maxLength: 16 })).map(([a, b]) => Buffer.concat([a, b])) },
    // A length-delimited field claiming more bytes than there are, or a varint that never ends.
    { weight: 1, arbitrary: fc.constantFrom(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f]), new Uint8Array(12).fill(0xff), new Uint8Array([0x0f]), new Uint8Array([0x0a, 0x02, 0xc3])) },
  );
}

/** Connect JSON: the message's own JSON, wrong types under the right names, and broken JSON. */
export function jsonMessageArb(schema: DescMessage, known: KnownValues): fc.Arbitrary<string> {
  const names = schema.fields.flatMap((f) => [f.jsonName, f.name]);
  const wrongTyped = fc.dictionary(
    fc.oneof(fc.constantFrom(...(names.length ? names : ["x"])), hostileString()),
    fc.oneof(hostileString(known), fc.jsonValue({ maxDepth: 3 })),
    { maxKeys: 6 },
  );
  return fc.oneof(
    { weight: 5, arbitrary: messageInitArb(schema, known).map((init) => toJsonString(schema, create(schema, init as never))) },
    { weight: 3, arbitrary: wrongTyped.map((o) => JSON.stringify(o)) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.constantFrom("", "{", "{\"a\":", "nul", "{\"grantType\":\"\\ud800\"}", "[", "\u0000") },
  );
}

/** gRPC length-prefixed frames: well-formed, or with lying lengths, odd flags, missing or extra frames. */
export function envelopesArb(message: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  const frame = (flags: number, payload: Uint8Array, length = payload.length) => {
    const head = Buffer.alloc(5);
    head[0] = flags;
    head.writeUInt32BE(length >>> 0, 1);
    return Buffer.concat([head, payload]);
  };
  return fc.oneof(
    { weight: 6, arbitrary: message.map((m) => frame(0, m)) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(1, 2, 0x80, 0x81, 0xff), message).map(([f, m]) => frame(f, m)) },
    { weight: 1, arbitrary: fc.tuple(message, fc.integer({ min: -3, max: 3 })).map(([m, d]) => frame(0, m, Math.max(0, m.length + d))) },
    { weight: 1, arbitrary: fc.tuple(message, message).map(([a, b]) => Buffer.concat([frame(0, a), frame(0, b)])) },
    { weight: 1, arbitrary: fc.constantFrom(new Uint8Array(), new Uint8Array([0]), new Uint8Array([0, 0, 0, 0]), frame(0, new Uint8Array(), 0xffffffff)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  );
}

/** Which credentials a method's callers send, so that cases get past authentication often enough. */
export function authorizationFor(method: DescMethod, known: KnownValues): fc.Arbitrary<string | undefined> {
  const service = method.parent.typeName;
  const basic = `Basic ${Buffer.from(`${known.clientId}:${known.clientSecret}`).toString("base64")}`;
  const good = service.includes("Admin")
    ? // Rotating a key per case would grow the key set without bound: that one is fuzzed unauthenticated.
      method.name === "RotateKey" ? [] : [`Bearer ${known.adminToken}`]
    : service.endsWith("IntrospectionService")
      ? [basic, `Bearer ${known.accessToken}`, `Bearer ${known.clientToken}`]
      : [basic];
  return fc.oneof(
    { weight: 3, arbitrary: good.length ? fc.constantFrom(...good) : fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: hostileString(known).map((s) => `Bearer ${s.replace(/[\r\n]/g, "")}`) },
  );
}

export const connectContentTypeArb = (binary: boolean) =>
  fc.oneof({ weight: 8, arbitrary: fc.constant(binary ? "application/proto" : "application/json") }, { weight: 1, arbitrary: fc.constantFrom("application/json; charset=utf-8", "application/proto; x=1", "application/connect+json", "application/grpc-web+proto") }, { weight: 1, arbitrary: contentTypeArb().map((t) => t ?? "") });

/** Connect protocol headers: version, timeout and compression, right and wrong. */
export function connectHeadersArb(): fc.Arbitrary<Array<[string, string]>> {
  const entry = fc.oneof(
    fc.tuple(fc.constant("connect-protocol-version"), fc.constantFrom("1", "2", "", "x")),
    fc.tuple(fc.constant("connect-timeout-ms"), fc.constantFrom("0", "1", "-5", "abc", "99999999999", "30000")),
    fc.tuple(fc.constantFrom("content-encoding", "connect-content-encoding"), fc.constantFrom("gzip", "br", "identity", "deflate", "x")),
    fc.tuple(fc.constant("accept-encoding"), fc.constantFrom("gzip", "br", "*", "x")),
    fc.tuple(fc.constantFrom("grpc-timeout", "x-grpc-web", "te"), fc.constantFrom("1n", "1", "trailers", "abc")),
  );
  return fc.oneof({ weight: 2, arbitrary: fc.constant([["connect-protocol-version", "1"]] as Array<[string, string]>) }, { weight: 1, arbitrary: fc.array(entry, { maxLength: 4 }) });
}

/** The answer of a raw gRPC call. */
export interface GrpcOutcome {
  code: number;
  details: string;
}

/** Send raw bytes as the message of a unary gRPC call with grpc-js; the server's status comes back. */
export function grpcJsRaw(client: grpc.Client, path: string, message: Uint8Array, metadata: Record<string, string>, timeoutMs = 60_000): Promise<GrpcOutcome> {
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(metadata)) md.set(key, value);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(message),
      md,
      { deadline: Date.now() + timeoutMs },
      (err: grpc.ServiceError | null) => resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: "" }),
    );
  });
}

/** An HTTP/2 request sent as is: any headers, any bytes. Resolves with the response headers and trailers. */
export function h2Raw(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body: Uint8Array,
  timeoutMs = 60_000,
): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders } | "reset"> {
  return new Promise((resolve, reject) => {
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(headers, { endStream: false });
    } catch {
      // Headers node itself refuses to send (e.g. a forbidden name): nothing reached the server.
      return resolve("reset");
    }
    const timer = setTimeout(() => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      reject(new Error(`no answer within ${timeoutMs} ms on ${String(headers[":path"])}`));
    }, timeoutMs);
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (responseHeaders = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", () => {});
    stream.on("error", () => {});
    stream.on("close", () => {
      clearTimeout(timer);
      resolve(stream.rstCode && !responseHeaders[":status"] ? "reset" : { headers: responseHeaders, trailers });
    });
    stream.end(Buffer.from(body));
  });
}
