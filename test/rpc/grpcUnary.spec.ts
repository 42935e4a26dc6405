import assert from "node:assert/strict";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { IntrospectionService, IntrospectRequestSchema, IntrospectResponseSchema } from "../../gen/identity/v1/introspection_pb.js";
import { createGrpcUnaryDoor } from "../../src/rpc/grpcUnary.js";
import type { ServiceBinding } from "../../src/rpc/services.js";
import type { RunningServer } from "../../src/app/server.js";
import { TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, postForm, RecordingLogger, startTestServer, TEST_APP } from "../support/server.js";
import { eventually } from "../support/deadline.js";

const INTROSPECT = "/identity.v1.IntrospectionService/Introspect";
const ROUTE = `connect:${INTROSPECT.slice(1)}`;
const GOOD_CLIENT = basicAuth(TEST_APP.clientId, TEST_APP.clientSecret);

const envelope = (payload: Uint8Array, flags = 0) => {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
};
const introspectRequest = (token: string) => toBinary(IntrospectRequestSchema, create(IntrospectRequestSchema, { token }));

interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

describe("unary gRPC served without Connect's streaming pipeline", () => {
  const logger = new RecordingLogger();
  let server: RunningServer;
  let session: http2.ClientHttp2Session;
  let token: string;

  before(async () => {
    server = await startTestServer({ logger });
    session = http2.connect(server.url);
    token = String((await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials", scope: "openid" }, { authorization: GOOD_CLIENT })).body.access_token);
  });
  after(async () => {
    session.destroy();
    await server.close();
  });

  function call(body: Uint8Array, headers: http2.OutgoingHttpHeaders = {}): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": INTROSPECT, "content-type": "application/grpc", te: "trailers", authorization: GOOD_CLIENT, ...headers });
      const answer: Answer = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
      const chunks: Buffer[] = [];
      stream.on("response", (h) => (answer.headers = h));
      stream.on("trailers", (t) => (answer.trailers = t));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", reject);
      stream.on("end", () => resolve({ ...answer, body: Buffer.concat(chunks) }));
      stream.end(body);
    });
  }

  const message = (answer: Answer) => fromBinary(IntrospectResponseSchema, answer.body.subarray(5));

  it("answers as Connect does: a compressed call (left to Connect) and a plain one agree, success and failure alike", async () => {
    const plain = await call(envelope(introspectRequest(token)), { "x-request-id": "caller-chose-this" });
    const compressed = await call(envelope(gzipSync(introspectRequest(token)), 1), { "grpc-encoding": "gzip" });
    assert.equal(compressed.headers["grpc-encoding"], "gzip", "Connect served the compressed call");
    assert.equal(plain.headers["grpc-encoding"], undefined);
    for (const answer of [plain, compressed]) {
      assert.equal(answer.headers[":status"], 200);
      assert.equal(answer.headers["content-type"], "application/grpc+proto");
      assert.equal(answer.headers["cache-control"], "no-store");
      assert.equal(answer.trailers["grpc-status"], "0");
    }
    assert.equal(plain.headers["x-request-id"], "caller-chose-this");
    assert.match(String(compressed.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
    assert.equal(message(plain).active, true);
    assert.deepEqual(message(plain), message(compressed));

    const wrongSecret = { authorization: basicAuth(TEST_APP.clientId, "wrong") };
    const refused = await call(envelope(introspectRequest(token)), wrongSecret);
    const refusedByConnect = await call(envelope(gzipSync(introspectRequest(token)), 1), { ...wrongSecret, "grpc-encoding": "gzip" });
    for (const field of ["grpc-status", "grpc-message", "grpc-status-details-bin", "x-oauth-error"]) {
      assert.equal(refused.trailers[field], refusedByConnect.trailers[field], field);
    }
    assert.equal(refused.trailers["grpc-status"], "16");
    assert.equal(refused.body.length, 0);

    // Both doors put the status on the call's log line.
    const statusesLogged = (compressed: boolean) =>
      logger.lines
        .filter((l) => l.fields?.route === ROUTE && ((l.fields?.headers as Record<string, string>)["grpc-encoding"] === "gzip") === compressed)
        .map((l) => l.fields?.grpc_status);
    assert.deepEqual(statusesLogged(true), [0, 16]);
    assert.deepEqual(statusesLogged(false), [0, 16]);
  });

  it("answers the JSON codec too", async () => {
    const answer = await call(envelope(Buffer.from(JSON.stringify({ token }))), { "content-type": "application/grpc+json" });
    assert.equal(answer.headers["content-type"], "application/grpc+json");
    assert.equal(answer.trailers["grpc-status"], "0");
    assert.equal(JSON.parse(answer.body.subarray(5).toString()).active, true);
  });

  it("refuses malformed calls with Connect's codes: none or two messages, a cut message, an oversized one, a bad deadline", async () => {
    const one = envelope(introspectRequest(token));
    const oversized = Buffer.alloc(5);
    oversized.writeUInt32BE(65537, 1);
    const cases: [string, Uint8Array, http2.OutgoingHttpHeaders, string][] = [
      ["no message", new Uint8Array(), {}, "12"],
      ["two messages", Buffer.concat([one, one]), {}, "12"],
      ["a message cut short", one.subarray(0, one.length - 3), {}, "3"],
      ["a message and a stray byte", Buffer.concat([one, Buffer.from([0])]), {}, "3"],
      ["a message over the size limit", oversized, {}, "8"],
      ["a malformed grpc-timeout", one, { "grpc-timeout": "soon" }, "3"],
    ];
    for (const [what, body, headers, status] of cases) {
      const answer = await call(body, headers);
      assert.equal(answer.trailers["grpc-status"], status, `${what}: ${answer.trailers["grpc-message"]}`);
    }
    assert.equal((await call(one, { "grpc-timeout": "5S" })).trailers["grpc-status"], "0", "a deadline the call meets");
  });

  it("logs each call with its gRPC status and client; a call the caller cancels mid-message is no server failure", async () => {
    const logged = () => logger.lines.filter((l) => l.message === "request" && l.fields?.route === ROUTE);
    const start = logged().length;
    await call(envelope(introspectRequest(token)));
    await eventually("the served call's log line", () => logged().length > start);
    const before = logged().length;
    const stream = session.request({ ":method": "POST", ":path": INTROSPECT, "content-type": "application/grpc", te: "trailers", authorization: GOOD_CLIENT });
    stream.on("error", () => {});
    stream.write(envelope(introspectRequest(token)).subarray(0, 10)); // half a message, then gone
    await sleep(50);
    stream.close(http2.constants.NGHTTP2_CANCEL);

    // The cancelled call's line comes once the server has seen the reset: wait for it, not for a guess at how long that takes.
    await eventually("the cancelled call's log line", () => logged().length > before);
    const lines = logged();
    const served = lines.find((l) => l.fields?.grpc_status === 0 && l.fields?.client_id === TEST_APP.clientId);
    assert.ok(served, JSON.stringify(lines));
    // Node ends the request body before it reports the reset, so the call may
    // still be answered (as a cut message); either way it is the caller's doing.
    const cancelled = lines.at(-1)!;
    assert.ok(cancelled.fields?.aborted === true || cancelled.fields?.grpc_status === 3, JSON.stringify(cancelled));
    assert.deepEqual(logger.lines.filter((l) => l.level === "error"), []);
    assert.equal(message(await call(envelope(introspectRequest(token)))).active, true, "the connection still serves calls");
  });
});

describe("the unary gRPC door on its own", () => {
  it("resets the stream when Node refuses the answer's headers, instead of an unhandled rejection", async () => {
    const impl = {
      introspect(_req: unknown, ctx: HandlerContext) {
        ctx.responseHeader.set("keep-alive", "5"); // HTTP/2 forbids connection-specific headers
        return { active: true };
      },
    };
    const door = createGrpcUnaryDoor([{ service: IntrospectionService, impl } as unknown as ServiceBinding], {
      toConnectError: (failure) => (failure instanceof ConnectError ? failure : new ConnectError("internal error", Code.Internal)),
      readMaxBytes: 65536,
      contextValues: () => createContextValues(),
    });
    const server = http2.createServer();
    server.on("stream", (stream, headers) => {
      stream.on("error", () => {}); // as the transport does: a reset stream emits one
      const target = door.claim(headers);
      if (target) door.serve(target, stream, headers, { requestId: "test" });
      else stream.respond({ ":status": 404 }, { endStream: true });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const code = await new Promise<number>((resolve) => {
        const stream = session.request({ ":method": "POST", ":path": INTROSPECT, "content-type": "application/grpc", te: "trailers" });
        stream.on("error", () => {});
        stream.on("data", () => {});
        stream.on("close", () => resolve(stream.rstCode ?? -1));
        stream.end(envelope(introspectRequest("x")));
      });
      assert.equal(code, http2.constants.NGHTTP2_INTERNAL_ERROR);
    } finally {
      session.destroy();
      server.close();
    }
  });
});
