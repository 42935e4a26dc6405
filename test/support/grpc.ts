import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

type UnaryCall = (request: object, metadata: grpc.Metadata, callback: (err: grpc.ServiceError | null, response: any) => void) => void;
export type GrpcClient = grpc.Client & Record<string, UnaryCall>;

/** A stock @grpc/grpc-js client of one identity.v1 service, built from its .proto. */
export function grpcClient(serverUrl: string, protoFile: string, service: string): GrpcClient {
  const definition = protoLoader.loadSync(protoFile, { includeDirs: ["proto"], keepCase: true, longs: Number });
  const loaded = grpc.loadPackageDefinition(definition) as any;
  const Client = loaded.identity.v1[service] as new (address: string, credentials: grpc.ChannelCredentials) => GrpcClient;
  return new Client(new URL(serverUrl).host, grpc.credentials.createInsecure());
}

/** Call a unary method; resolves with the response or rejects with the gRPC error. */
export function unary(client: GrpcClient, method: string, request: object, metadata: Record<string, string> = {}): Promise<any> {
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(metadata)) md.set(key, value);
  return new Promise((resolve, reject) => client[method]!.call(client, request, md, (err, res) => (err ? reject(err) : resolve(res))));
}
