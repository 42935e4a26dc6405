import { connect, constants, type ClientHttp2Session } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { IntrospectionService, IntrospectRequestSchema, IntrospectResponseSchema } from "../gen/identity/v1/introspection_pb.js";
import { latencyResult, type LoadResult } from "./httpLoad.js";

export interface GrpcLoadOptions {
  /** host:port of the server's one port (h2c). */
  address: string;
  tokens: string[];
  /** `authorization` metadata (Basic client credentials). */
  authorization: string;
  seconds: number;
  warmupSeconds: number;
  concurrency: number;
}

export const GRPC_INTROSPECT_PATH = `/${IntrospectionService.typeName}/${IntrospectionService.method.introspect.name}`;

/** A gRPC message on the wire: flag byte (0, uncompressed), 4-byte big-endian length, the message. */
export function frame(message: Uint8Array): Buffer {
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

/** An IntrospectRequest for `token`, framed as a gRPC call's body. */
export const introspectionCall = (token: string) => frame(toBinary(IntrospectRequestSchema, create(IntrospectRequestSchema, { token })));

/**
 * Introspect over gRPC (one h2c connection) with `concurrency` calls always
 * in flight, cycling through `tokens`: the gRPC row's client where h2load
 * is not installed. Like autocannon (and h2load or ghz) it sends requests
 * encoded up front over a bare HTTP/2 session, but Node's HTTP/2 client
 * still spends 200-300 µs of CPU per call (grpc-js's: 380-630; autocannon
 * 70-100 per REST request), and on two cores the client's CPU is taken
 * from the server.
 * Every answer is checked: HTTP 200, grpc-status 0 in the trailers,
 * and a decoded IntrospectResponse with active = true. Interoperability
 * with grpc-js is the test suite's job (test/e2e/grpc.spec.ts).
 */
export async function grpcIntrospectionLoad(options: GrpcLoadOptions): Promise<LoadResult> {
  const session = connect(`http://${options.address}`);
  await new Promise<void>((resolve, reject) => session.once("connect", () => resolve()).once("error", reject));
  const bodies = options.tokens.map(introspectionCall);
  const headers = {
    [constants.HTTP2_HEADER_METHOD]: "POST",
    [constants.HTTP2_HEADER_PATH]: GRPC_INTROSPECT_PATH,
    "content-type": "application/grpc+proto",
    te: "trailers",
    authorization: options.authorization,
  };

  const run = async (seconds: number) => {
    const latencies: number[] = [];
    let failures = 0;
    let next = 0;
    const deadline = performance.now() + seconds * 1000;
    const started = performance.now();
    const call = (body: Buffer) =>
      new Promise<void>((resolve) => {
        const t0 = performance.now();
        const ok = (answered: boolean) => {
          if (answered) latencies.push(performance.now() - t0);
          else failures++;
          resolve();
        };
        introspect(session, headers, body).then(ok, () => ok(false));
      });
    const lane = async () => {
      while (performance.now() < deadline) await call(bodies[next++ % bodies.length]!);
    };
    await Promise.all(Array.from({ length: options.concurrency }, lane));
    return latencyResult(latencies, failures, (performance.now() - started) / 1000);
  };

  try {
    const warmup = options.warmupSeconds > 0 ? (await run(options.warmupSeconds)).ok : 0;
    const result = await run(options.seconds);
    return { ...result, okWithWarmup: result.ok + warmup };
  } finally {
    session.close();
  }
}

/** One unary call; resolves whether it came back OK with an active token. */
function introspect(session: ClientHttp2Session, headers: Record<string, string>, body: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: false });
    const chunks: Buffer[] = [];
    let status = 0;
    let grpcStatus: string | undefined;
    stream.on("response", (h) => {
      status = Number(h[constants.HTTP2_HEADER_STATUS]);
      grpcStatus = h["grpc-status"] as string | undefined; // a trailers-only answer carries it here
    });
    stream.on("trailers", (t) => (grpcStatus = t["grpc-status"] as string | undefined));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      const data = Buffer.concat(chunks);
      if (status !== 200 || grpcStatus !== "0" || data.length < 5 || data.readUInt32BE(1) !== data.length - 5) return resolve(false);
      resolve(fromBinary(IntrospectResponseSchema, data.subarray(5)).active === true);
    });
    stream.end(body);
  });
}
