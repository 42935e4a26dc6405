import assert from "node:assert/strict";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import { reflectionService } from "../../src/rpc/reflection.js";

// Shapes as @grpc/proto-loader hands them out with keepCase + oneofs.
interface ReflectionResponse {
  valid_host: string;
  original_request: Record<string, unknown>;
  message_response: string;
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  list_services_response?: { service: { name: string }[] };
  all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  error_response?: { error_code: number; error_message: string };
}

type ReflectionClient = grpc.Client & {
  ServerReflectionInfo(): grpc.ClientDuplexStream<object, ReflectionResponse>;
};
type ReflectionClientConstructor = new (address: string, credentials: grpc.ChannelCredentials) => ReflectionClient;

const GOOGLE_API_HTTP = 72295728; // extension number of (google.api.http) on MethodOptions

describe("gRPC server reflection", () => {
  let server: http2.Http2Server;
  let client: ReflectionClient;

  before(async () => {
    server = http2.createServer(
      connectNodeAdapter({
        routes: (router) =>
          router.service(ServerReflection, reflectionService([TokenService, IntrospectionService])),
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;

    // A stock grpc-js client built from the .proto, i.e. what grpcurl-like tools speak.
    const definition = protoLoader.loadSync("grpc/reflection/v1/reflection.proto", {
      includeDirs: ["proto"],
      keepCase: true,
      oneofs: true,
    });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      grpc: { reflection: { v1: { ServerReflection: ReflectionClientConstructor } } };
    };
    const Client = loaded.grpc.reflection.v1.ServerReflection;
    client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });

  after(async () => {
    client?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  /** Sends all requests on one bidi stream and collects every response until the server ends it. */
  function exchange(...requests: object[]): Promise<ReflectionResponse[]> {
    return new Promise((resolve, reject) => {
      const responses: ReflectionResponse[] = [];
      const call = client.ServerReflectionInfo();
      call.on("data", (response: ReflectionResponse) => responses.push(response));
      call.on("error", reject);
      call.on("end", () => resolve(responses));
      for (const request of requests) call.write(request);
      call.end();
    });
  }

  async function ask(request: object): Promise<ReflectionResponse> {
    const responses = await exchange(request);
    assert.equal(responses.length, 1);
    return responses[0]!;
  }

  function fileNames(response: ReflectionResponse): string[] {
    assert.equal(response.message_response, "file_descriptor_response", JSON.stringify(response.error_response));
    return response.file_descriptor_response!.file_descriptor_proto.map(
      (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
    );
  }

  it("lists the registered services and itself", async () => {
    const response = await ask({ host: "localhost", list_services: "" });
    assert.equal(response.message_response, "list_services_response");
    const names = response.list_services_response!.service.map((s) => s.name);
    assert.deepEqual(names.sort(), [
      "grpc.reflection.v1.ServerReflection",
      "identity.v1.IntrospectionService",
      "identity.v1.TokenService",
    ]);
  });

  it("echoes valid_host and original_request", async () => {
    const response = await ask({ host: "example.test", file_containing_symbol: "identity.v1.TokenService" });
    assert.equal(response.valid_host, "example.test");
    assert.equal(response.original_request.host, "example.test");
    assert.equal(response.original_request.file_containing_symbol, "identity.v1.TokenService");
  });

  it("returns the file of a service with its transitive imports, each once", async () => {
    const response = await ask({ file_containing_symbol: "identity.v1.TokenService" });
    const names = fileNames(response);
    assert.equal(names[0], "identity/v1/token.proto");
    assert.ok(names.includes("google/api/annotations.proto"));
    // annotations.proto imports these, so a client needs them to build its pool.
    assert.ok(names.includes("google/api/http.proto"));
    assert.ok(names.includes("google/protobuf/descriptor.proto"));
    assert.equal(new Set(names).size, names.length);

    const token = fromBinary(FileDescriptorProtoSchema, response.file_descriptor_response!.file_descriptor_proto[0]!);
    assert.equal(token.package, "identity.v1");
    assert.deepEqual(token.dependency, ["google/api/annotations.proto"]);
    assert.deepEqual(
      token.service.map((s) => s.name),
      ["TokenService"],
    );
  });

  it("resolves messages, methods and fields to their file", async () => {
    const symbols = ["identity.v1.TokenRequest", "identity.v1.TokenService.Token", "identity.v1.TokenRequest.grant_type"];
    for (const symbol of symbols) {
      const names = fileNames(await ask({ file_containing_symbol: symbol }));
      assert.equal(names[0], "identity/v1/token.proto", symbol);
    }
    const introspection = fileNames(await ask({ file_containing_symbol: "identity.v1.IntrospectRequest" }));
    assert.equal(introspection[0], "identity/v1/introspection.proto");
  });

  it("returns a file by name", async () => {
    const names = fileNames(await ask({ file_by_filename: "google/api/annotations.proto" }));
    assert.equal(names[0], "google/api/annotations.proto");
    assert.ok(names.includes("google/protobuf/descriptor.proto"));
  });

  it("answers extension queries from the registry", async () => {
    const byExtension = await ask({
      file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: GOOGLE_API_HTTP },
    });
    assert.equal(fileNames(byExtension)[0], "google/api/annotations.proto");

    const numbers = await ask({ all_extension_numbers_of_type: "google.protobuf.MethodOptions" });
    assert.equal(numbers.message_response, "all_extension_numbers_response");
    assert.equal(numbers.all_extension_numbers_response!.base_type_name, "google.protobuf.MethodOptions");
    assert.deepEqual(numbers.all_extension_numbers_response!.extension_number, [GOOGLE_API_HTTP]);
  });

  it("answers NOT_FOUND for unknown symbols, files and extensions without ending the stream", async () => {
    const responses = await exchange(
      { file_containing_symbol: "identity.v1.NoSuchThing" },
      { file_containing_symbol: "identity.v1.TokenRequest.no_such_field" },
      { file_by_filename: "nope.proto" },
      { file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: 1 } },
      { all_extension_numbers_of_type: "identity.v1.NoSuchThing" },
      { list_services: "" },
    );
    assert.equal(responses.length, 6);
    for (const response of responses.slice(0, 5)) {
      assert.equal(response.message_response, "error_response");
      assert.equal(response.error_response!.error_code, grpc.status.NOT_FOUND);
      assert.ok(response.error_response!.error_message.length > 0);
    }
    assert.match(responses[0]!.error_response!.error_message, /identity\.v1\.NoSuchThing/);
    // The stream is still usable after errors.
    assert.equal(responses[5]!.message_response, "list_services_response");
  });
});
