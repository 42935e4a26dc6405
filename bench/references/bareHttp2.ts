import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { IntrospectResponseSchema } from "../../gen/identity/v1/introspection_pb.js";
import { frame } from "../h2load.js";

// The Node HTTP/2 ceiling for a gRPC unary call: read the request, answer
// one framed IntrospectResponse and a grpc-status trailer. No gRPC library,
// no storage: what any gRPC server on this machine pays for the transport.
const framed = frame(
  toBinary(
    IntrospectResponseSchema,
    create(IntrospectResponseSchema, { active: true, clientId: "bench-client", tokenType: "Bearer", scope: "openid profile email", jti: "11111111-1111-4111-8111-111111111111" }),
  ),
);

const server = http2.createServer((req, res) => {
  req.on("data", () => {});
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/grpc+proto" });
    res.addTrailers({ "grpc-status": "0" });
    res.end(framed);
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
