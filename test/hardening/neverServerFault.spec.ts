import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { gzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import type { RunningServer } from "../../src/app/server.js";
import { WarningLog } from "../support/fuzz/run.js";
import { exchange, header, type WireResponse } from "../support/fuzz/wire.js";
import { describeEachBackend } from "../support/databases.js";
import { grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP } from "../support/server.js";
import { scaledMs } from "../support/deadline.js";

/** A message whose protobuf bytes do not decode: field 1, wire type 7, which does not exist. */
const UNDECODABLE = new Uint8Array([0x0f]);
/** A JSON body that breaks right after an astral character: V8 quotes it, cutting the pair in half. */
const JSON_CUT_PAIR = Buffer.from(`{"grantType": "${"😀".repeat(40)}`, "utf8");

const frame = (payload: Uint8Array, flags = 0) => Buffer.concat([Buffer.from([flags, 0, 0, 0, payload.length]), payload]);

/** One raw gRPC call over h2c: headers and trailers together, or "hung" if nothing ends it within 5 s (more on a loaded machine). */
function h2Call(server: RunningServer, contentType: string, body: Uint8Array): Promise<Record<string, unknown> | "hung"> {
  const session = http2.connect(server.url);
  session.on("error", () => {});
  return new Promise<Record<string, unknown> | "hung">((resolve) => {
    const timer = setTimeout(() => resolve("hung"), scaledMs(5000));
    const req = session.request({ ":method": "POST", ":path": "/identity.v1.TokenService/Token", "content-type": contentType, te: "trailers" });
    let answer: Record<string, unknown> = {};
    req.on("response", (h) => (answer = { ...answer, ...h }));
    req.on("trailers", (t) => (answer = { ...answer, ...t }));
    req.on("data", () => {});
    req.on("error", () => {});
    req.on("close", () => {
      clearTimeout(timer);
      resolve(answer);
    });
    req.end(body);
  }).finally(() => session.destroy());
}

/** gRPC-Web over HTTP/1.1: the status from the trailer frame at the end of the body. */
async function grpcWebStatus(server: RunningServer, contentType: string, body: Uint8Array): Promise<string | undefined> {
  const res = (await exchange(server.port, {
    method: "POST",
    target: "/identity.v1.TokenService/Token",
    headers: [["content-type", contentType], ["x-grpc-web", "1"], ["content-length", String(body.length)]],
    body,
  }, 5000)) as WireResponse;
  assert.equal(res.status, 200);
  return /grpc-status: (\d+)/.exec(res.body.toString("latin1"))?.[1];
}

describe("bad input is never a server fault", () => {
  const logger = new WarningLog();
  let server: RunningServer;
  before(async () => (server = await startTestServer({ logger })));
  after(() => server.close());
  afterEach(() => assert.deepEqual(logger.unexpected(), [], "nothing logged as unexpected"));

  describe("undecodable request bytes are InvalidArgument, not Internal (connect-es's answer)", () => {
    it("on the Connect protocol: 400 invalid_argument", async () => {
      const res = (await exchange(server.port, {
        method: "POST",
        target: "/identity.v1.TokenService/Token",
        headers: [["content-type", "application/proto"], ["content-length", "1"]],
        body: UNDECODABLE,
      })) as WireResponse;
      assert.equal(res.status, 400);
      assert.equal(JSON.parse(res.body.toString()).code, "invalid_argument");
    });

    it("on gRPC (grpc-js), gRPC over raw HTTP/2 and gRPC-Web: status 3", async () => {
      const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
      try {
        const code = await new Promise<number>((resolve) =>
          client.makeUnaryRequest("/identity.v1.TokenService/Token", (b: Buffer) => b, (b: Buffer) => b, Buffer.from(UNDECODABLE), (err) => resolve(err?.code ?? 0)),
        );
        assert.equal(code, grpc.status.INVALID_ARGUMENT);
      } finally {
        client.close();
      }
      assert.equal((await h2Call(server, "application/grpc", frame(UNDECODABLE)) as Record<string, unknown>)["grpc-status"], "3");
      assert.equal(await grpcWebStatus(server, "application/grpc-web+proto", frame(UNDECODABLE)), "3");
    });

    it("for a compressed flag without an encoding, and a gzip body cut short", async () => {
      assert.equal((await h2Call(server, "application/grpc", frame(new Uint8Array([1, 2, 3]), 1)) as Record<string, unknown>)["grpc-status"], "3");
      assert.equal(await grpcWebStatus(server, "application/grpc-web+proto", frame(new Uint8Array([1, 2, 3]), 1)), "3");
      const cut = gzipSync(Buffer.from(JSON.stringify({ grantType: "client_credentials" }))).subarray(0, 12);
      const res = (await exchange(server.port, {
        method: "POST",
        target: "/identity.v1.TokenService/Token",
        headers: [["content-type", "application/json"], ["content-encoding", "gzip"], ["content-length", String(cut.length)]],
        body: cut,
      })) as WireResponse;
      assert.equal(res.status, 400);
      assert.equal(JSON.parse(res.body.toString()).code, "invalid_argument");
    });
  });

  describe("an error message with half a surrogate pair still ends the call (it used to hang forever)", () => {
    it("our own description, cut at 64 characters inside a pair (grpc-js)", async () => {
      const { token } = grpcJsClients(server.port);
      try {
        const { error } = await grpcJsCall(token, "Token", { grant_type: `${"a".repeat(63)}😀` }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
        assert.equal(error?.code, grpc.status.INVALID_ARGUMENT);
        assert.match(error!.details, /^unsupported grant_type/);
      } finally {
        token.close();
      }
    });

    it("connect-es's own JSON decoding error, quoting the request, on gRPC and gRPC-Web", async () => {
      const grpcAnswer = await h2Call(server, "application/grpc+json", frame(JSON_CUT_PAIR));
      assert.notEqual(grpcAnswer, "hung");
      assert.equal((grpcAnswer as Record<string, unknown>)["grpc-status"], "3");
      assert.equal(await grpcWebStatus(server, "application/grpc-web+json", frame(JSON_CUT_PAIR)), "3");
    });
  });

  describe("headers the Connect adapter would trip over", () => {
    it("a deadline longer than a timer holds is no deadline, not an instant timeout", async () => {
      const jwks = (timeout: [string, string]) =>
        exchange(server.port, {
          method: "POST",
          target: "/identity.v1.DiscoveryService/GetJwks",
          headers: [["content-type", "application/json"], timeout, ["content-length", "2"]],
          body: Buffer.from("{}"),
        }) as Promise<WireResponse>;
      assert.equal((await jwks(["connect-timeout-ms", "9999999999"])).status, 200);
      const session = http2.connect(server.url);
      try {
        const status = await new Promise((resolve) => {
          const req = session.request({ ":method": "POST", ":path": "/identity.v1.DiscoveryService/GetJwks", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "99999999H" });
          req.on("trailers", (t) => resolve(t["grpc-status"]));
          req.on("data", () => {});
          req.end(frame(new Uint8Array()));
        });
        assert.equal(status, "0");
      } finally {
        session.destroy();
      }
    });

    it("an HTTP/1.0 call without Host is served", async () => {
      const answer = await new Promise<string>((resolve) => {
        const socket = net.connect(server.port, "127.0.0.1");
        let received = "";
        socket.on("data", (d) => (received += d));
        socket.on("close", () => resolve(received));
        socket.end("POST /identity.v1.DiscoveryService/GetJwks HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}");
      });
      assert.match(answer, /^HTTP\/1\.1 200 /);
    });
  });

  describe("the HTTP layer's own refusals are RFC 6749 errors too", () => {
    for (const [what, headers, status] of [
      ["malformed headers", [["bad header", "x"]], 400],
      ["an Expect other than 100-continue", [["expect", "nothing"]], 417],
      ["conflicting lengths", [["content-length", "1"], ["content-length", "2"]], 400],
    ] as Array<[string, Array<[string, string]>, number]>) {
      it(`${what}: ${status}`, async () => {
        const res = (await exchange(server.port, { method: "GET", target: "/.well-known/jwks", headers })) as WireResponse;
        assert.equal(res.status, status);
        assert.equal(header(res, "content-type"), "application/json; charset=utf-8");
        assert.equal(JSON.parse(res.body.toString()).error, "invalid_request");
      });
    }

    for (const target of ["http://a:b/", "//[", "http://[::1/x"]) {
      it(`a request target that does not parse as a URL (${target}): 400`, async () => {
        const res = (await exchange(server.port, { method: "GET", target, headers: [] })) as WireResponse;
        assert.equal(res.status, 400);
        assert.equal(header(res, "content-type"), "application/json; charset=utf-8");
        assert.equal(JSON.parse(res.body.toString()).error, "invalid_request");
      });
    }

    it("a body cut short by a client that goes away is not logged as a server error", async () => {
      const res = await exchange(server.port, {
        method: "POST",
        target: "/api/login/oauth/access_token",
        headers: [["content-type", "application/x-www-form-urlencoded"], ["content-length", "100"]],
        body: Buffer.from("grant_type=client_credentials"),
        cutBodyAt: 10,
      });
      if (res !== "closed") {
        // Whoever notices first answers: the HTTP parser (malformed) or the body reader (ended early).
        assert.equal(res.status, 400);
        assert.equal(JSON.parse(res.body.toString()).error, "invalid_request");
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // let the server notice before afterEach looks at the log
    });
  });
});

describeEachBackend("text with a NUL character (PostgreSQL cannot store it)", (ctx) => {
  let server: RunningServer;
  const logger = new WarningLog();
  before(async () => (server = await startTestServer({ database: ctx.url, logger })));
  after(() => server.close());

  it("is a 4xx wherever it is looked up, and nothing is logged as unexpected", async () => {
    const token = `${server.url}/api/login/oauth/access_token`;
    const viaBasic = await postForm(token, { grant_type: "client_credentials" }, { authorization: basicAuth("client\u0000-1", "x") });
    assert.ok(viaBasic.status === 400 || viaBasic.status === 401, JSON.stringify(viaBasic.body));
    const viaBody = await postForm(token, { grant_type: "password", username: "al\u0000ice", password: "x" }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    assert.equal(viaBody.status, 400);
    const admin = await fetch(`${server.url}/identity.v1.UserAdminService/GetUser`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: "bo\u0000b" }),
    });
    assert.ok(admin.status === 400 || admin.status === 404, String(admin.status));
    assert.deepEqual(logger.unexpected(), []);
  });
});
