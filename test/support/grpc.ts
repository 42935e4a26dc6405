import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

// A stock grpc-js client built from the .proto files, as a polyglot caller
// would generate it. keepCase keeps the proto field names; unset fields stay
// absent (and proto3 `optional` adds no synthetic oneof key).
const definition = protoLoader.loadSync(["identity/v1/token.proto", "identity/v1/introspection.proto"], {
  includeDirs: ["proto"],
  keepCase: true,
  longs: Number,
  defaults: false,
});
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  identity: { v1: Record<string, grpc.ServiceClientConstructor> };
};

export type GrpcService = "TokenService" | "IntrospectionService";

/** Unary calls over h2c to the server's one port; metadata is sent as given (e.g. authorization). */
export class GrpcCaller {
  private readonly clients = new Map<GrpcService, grpc.Client>();

  constructor(serverUrl: string) {
    const address = new URL(serverUrl).host;
    for (const name of ["TokenService", "IntrospectionService"] as const) {
      this.clients.set(name, new loaded.identity.v1[name]!(address, grpc.credentials.createInsecure()));
    }
  }

  call(service: GrpcService, method: string, request: object, metadata: Record<string, string> = {}): Promise<any> {
    const md = new grpc.Metadata();
    for (const [key, value] of Object.entries(metadata)) md.set(key, value);
    const client = this.clients.get(service) as unknown as Record<
      string,
      (req: object, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void
    >;
    return new Promise((resolve, reject) =>
      client[method]!.call(client, request, md, (err, res) => (err ? reject(err) : resolve(res))),
    );
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
  }
}

/** The OAuth error code the server attaches to a failed RPC. */
export function oauthErrorOf(err: unknown): string | undefined {
  const value = (err as grpc.ServiceError).metadata?.get("x-oauth-error")[0];
  return value === undefined ? undefined : String(value);
}
