import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { latencyResult, type LoadResult } from "./httpLoad.js";

const definition = protoLoader.loadSync("identity/v1/introspection.proto", {
  includeDirs: ["proto"],
  keepCase: true,
  longs: Number,
  defaults: false,
});
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  identity: { v1: { IntrospectionService: grpc.ServiceClientConstructor } };
};

type Introspect = (
  request: { token: string },
  metadata: grpc.Metadata,
  callback: (err: grpc.ServiceError | null, response?: { active?: boolean }) => void,
) => void;

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

/**
 * Introspect over gRPC (grpc-js, one h2c connection) with `concurrency`
 * calls always in flight, as autocannon keeps its connections busy.
 */
export async function grpcIntrospectionLoad(options: GrpcLoadOptions): Promise<LoadResult> {
  const client = new loaded.identity.v1.IntrospectionService(options.address, grpc.credentials.createInsecure());
  const introspect = (client as unknown as { introspect: Introspect }).introspect.bind(client);
  const metadata = new grpc.Metadata();
  metadata.set("authorization", options.authorization);

  const run = async (seconds: number) => {
    const latencies: number[] = [];
    let failures = 0;
    let next = 0;
    const deadline = performance.now() + seconds * 1000;
    const started = performance.now();
    const call = (token: string) =>
      new Promise<void>((resolve) => {
        const t0 = performance.now();
        introspect({ token }, metadata, (err, response) => {
          if (err || response?.active !== true) failures++;
          else latencies.push(performance.now() - t0);
          resolve();
        });
      });
    const lane = async () => {
      while (performance.now() < deadline) await call(options.tokens[next++ % options.tokens.length]!);
    };
    await Promise.all(Array.from({ length: options.concurrency }, lane));
    return latencyResult(latencies, failures, (performance.now() - started) / 1000);
  };

  try {
    const warmup = options.warmupSeconds > 0 ? (await run(options.warmupSeconds)).ok : 0;
    const result = await run(options.seconds);
    return { ...result, okWithWarmup: result.ok + warmup };
  } finally {
    client.close();
  }
}
