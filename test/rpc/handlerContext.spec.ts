import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { createContextValues } from "@connectrpc/connect";
import { plainHandlerContext } from "../../src/rpc/handlerContext.js";

const contextFor = (headers: IncomingMessage["headers"]) =>
  plainHandlerContext({
    service: IntrospectionService,
    method: IntrospectionService.method.introspect,
    protocolName: "rest",
    req: { method: "POST", headers },
    url: "http://localhost/api/login/oauth/introspect",
    values: createContextValues(),
  });

describe("the handler context our own doors (REST, unary gRPC) hand to the implementation", () => {
  it("answers get and has by any case of the name, joins repeated values, and hides HTTP/2 pseudo-headers", () => {
    const headers = contextFor({ authorization: "Basic abc", "x-list": ["a", "b"], ":path": "/x" }).requestHeader;
    assert.ok(headers instanceof Headers);
    assert.equal(headers.get("Authorization"), "Basic abc");
    assert.equal(headers.get("x-list"), "a, b");
    assert.equal(headers.get(":path"), null);
    assert.equal(headers.get("cookie"), null);
    assert.equal(headers.has("AUTHORIZATION"), true);
    assert.equal(headers.has("cookie"), false);
  });

  it("behaves as a copy once walked or changed, without touching the request's own headers", () => {
    const source = { authorization: "Basic abc", "x-list": ["a", "b"], ":path": "/x" };
    const headers = contextFor(source).requestHeader;
    assert.deepEqual([...headers], [["authorization", "Basic abc"], ["x-list", "a, b"]]);
    headers.set("authorization", "Bearer t");
    headers.append("x-new", "1");
    headers.delete("x-list");
    assert.equal(headers.get("authorization"), "Bearer t");
    assert.equal(headers.get("x-new"), "1");
    assert.equal(headers.has("x-list"), false);
    const seen: string[] = [];
    headers.forEach((value, key) => seen.push(`${key}=${value}`));
    assert.deepEqual(seen, ["authorization=Bearer t", "x-new=1"]);
    assert.deepEqual(source, { authorization: "Basic abc", "x-list": ["a", "b"], ":path": "/x" });
  });

  it("gives each call its own response headers and trailers", () => {
    const a = contextFor({});
    const b = contextFor({});
    a.responseHeader.set("cache-control", "no-store");
    a.responseTrailer.set("x-t", "1");
    assert.equal(a.responseTrailer.get("x-t"), "1");
    assert.equal(b.responseHeader.get("cache-control"), null);
    assert.equal(b.responseTrailer.get("x-t"), null);
  });
});
