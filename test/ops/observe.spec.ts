import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { requestContextOf } from "../../src/http/requestContext.js";
import { observeRequests, type TargetHandler } from "../../src/ops/observe.js";
import { RecordingLogger } from "../support/server.js";

/** A server whose every request goes through observeRequests to `handler`, and its log. */
async function observed(handler: TargetHandler) {
  const logger = new RecordingLogger();
  const server = http.createServer(observeRequests(handler, { logger, routeOf: (path) => (["/token", "/healthz"].includes(path) ? path : "other"), quietRoutes: new Set(["/healthz"]) }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The line is written when the response closes, just after the client has its answer.
  const lineFor = async (path: string, init?: RequestInit) => {
    const res = await fetch(`${url}${path}`, init);
    await res.arrayBuffer();
    for (let i = 0; i < 100 && !logger.lines.some((l) => l.message === "request" && l.fields?.request_id === res.headers.get("x-request-id")); i++) {
      await new Promise((r) => setImmediate(r));
    }
    return { res, line: logger.lines.find((l) => l.fields?.request_id === res.headers.get("x-request-id")) };
  };
  return { lineFor, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("the request's log line", () => {
  it("carries route, status and the audit event the request caused, in one line", async () => {
    const server = await observed((req, res) => {
      const context = requestContextOf(req)!;
      context.clientId = "client-1";
      context.auditEvent = { event: "token_issued", outcome: "success" };
      res.end("{}");
    });
    try {
      const { line } = await server.lineFor("/token");
      assert.equal(line?.message, "request");
      const { request_id, duration_ms, headers, ...rest } = line!.fields!;
      assert.ok(request_id && typeof duration_ms === "number" && headers, "id, duration and (at debug) headers are there too");
      assert.deepEqual(rest, { method: "GET", route: "/token", status: 200, client_id: "client-1", event: "token_issued", outcome: "success" });
    } finally {
      await server.close();
    }
  });

  it("echoes a plain X-Request-Id, and makes one up for a forged one", async () => {
    const server = await observed((_req, res) => res.end());
    try {
      assert.equal((await server.lineFor("/x", { headers: { "x-request-id": "abc-123" } })).res.headers.get("x-request-id"), "abc-123");
      const forged = (await server.lineFor("/x", { headers: { "x-request-id": "a b\u00e9" } })).res.headers.get("x-request-id");
      assert.match(forged!, /^[0-9a-f-]{36}$/);
    } finally {
      await server.close();
    }
  });

  it("logs quiet routes at debug level and names unknown paths by path", async () => {
    const server = await observed((_req, res) => res.end());
    try {
      assert.equal((await server.lineFor("/healthz")).line?.level, "debug");
      assert.equal((await server.lineFor("/nowhere")).line?.fields?.path, "/nowhere");
    } finally {
      await server.close();
    }
  });
});
