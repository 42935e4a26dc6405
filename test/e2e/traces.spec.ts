import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GrpcCaller } from "../support/grpc.js";
import { startInstance, type Instance } from "../support/instances.js";
import { attribute, startReceiver, type OtlpSpan } from "../support/otlpReceiver.js";
import { ADMIN_TOKEN, basicAuth, postForm, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

async function until<T>(what: string, probe: () => T | undefined, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// OTLP/JSON gives the span kind as its enum number.
const SERVER = 2;
const CLIENT = 3;

describe("e2e: traces over OTLP/HTTP (issue 29 §6)", function () {
  this.timeout(60_000);
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let instance: Instance;
  let dir: string;

  before(async () => {
    receiver = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), "identity-traces-"));
    instance = await startInstance(
      ["--database", join(dir, "identity.sqlite"), "--config", writeConfigFile({ applications: [TEST_APP], users: [TEST_USER] }), "--admin-token", ADMIN_TOKEN],
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "identity-under-test",
        OTEL_TRACES_SAMPLER: "parentbased_always_on",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
    );
  });

  after(async () => {
    await instance?.stop();
    await new Promise((resolve) => receiver?.server.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("traces a token request as a child of the caller's traceparent, with signing and database spans, and no secret", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parentId = "00f067aa0ba902b7";
    const res = await postForm(
      `${instance.url}/api/login/oauth/access_token`,
      { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), traceparent: `00-${traceId}-${parentId}-01` },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const tokens = res.body as { access_token: string; id_token: string };

    const request = await until("the request span", () =>
      receiver.received.spans.find((s) => s.traceId === traceId && s.kind === SERVER && attribute(s, "http.route")?.toString().includes("access_token")),
    );
    assert.equal(request.parentSpanId, parentId);
    assert.equal(attribute(request, "http.request.method"), "POST");
    assert.equal(Number(attribute(request, "http.response.status_code")), 200);
    assert.equal(attribute(request, "identity.client_id"), TEST_APP.clientId);

    // The spans under it: each one's parent chain leads to the request span.
    const inTrace = () => receiver.received.spans.filter((s) => s.traceId === traceId);
    const underRequest = (s: OtlpSpan): boolean => {
      const byId = new Map(inTrace().map((t) => [t.spanId, t]));
      for (let at: OtlpSpan | undefined = s; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) {
        if (at.spanId === request.spanId) return true;
      }
      return false;
    };
    const signing = await until("the signing spans", () => {
      const found = inTrace().filter((s) => s.name === "jwt sign");
      return found.length >= 2 ? found : undefined; // the access token and the ID token
    });
    for (const s of signing) {
      assert.ok(underRequest(s), `signing span ${s.spanId} is under the request span`);
      assert.ok(attribute(s, "jwt.kid"));
    }
    const database = await until("database spans", () => {
      const found = inTrace().filter((s) => s.name.startsWith("db ") && s.kind === CLIENT);
      return found.some((s) => attribute(s, "db.operation.name") === "INSERT") ? found : undefined;
    });
    for (const s of database) {
      assert.ok(underRequest(s), `database span ${s.name} is under the request span`);
      assert.equal(attribute(s, "db.system.name"), "sqlite");
    }

    // The resource names the service as OTEL_SERVICE_NAME says.
    assert.ok(receiver.received.resources.some((attrs) => attrs.some((a) => a.key === "service.name" && a.value.stringValue === "identity-under-test")));

    // No secret in any span: not the client secret, the password, or a token.
    const everything = receiver.bodies.join("\n");
    for (const secret of [TEST_APP.clientSecret, TEST_USER.password, tokens.access_token, tokens.id_token, basicAuth(TEST_APP.clientId, TEST_APP.clientSecret)]) {
      assert.ok(!everything.includes(secret), `a span carries ${secret.slice(0, 12)}...`);
    }
    // Nor a token's signature or payload part on its own.
    for (const part of tokens.access_token.split(".")) assert.ok(!everything.includes(part));
  });

  it("traces a unary gRPC call (h2c) under the caller's traceparent, with its signing span and grpc status", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const parentId = "b7ad6b7169203331";
    const grpc = new GrpcCaller(instance.url);
    let tokens: { access_token: string };
    try {
      tokens = await grpc.call(
        "TokenService",
        "Token",
        { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" },
        { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), traceparent: `00-${traceId}-${parentId}-01` },
      );
    } finally {
      grpc.close();
    }
    const request = await until("the gRPC request span", () => receiver.received.spans.find((s) => s.traceId === traceId && s.kind === SERVER));
    assert.equal(request.parentSpanId, parentId);
    assert.equal(Number(attribute(request, "rpc.grpc.status_code")), 0);
    await until("its signing span", () => receiver.received.spans.find((s) => s.traceId === traceId && s.name === "jwt sign" && s.parentSpanId === request.spanId));
    const everything = receiver.bodies.join("\n");
    for (const secret of [TEST_APP.clientSecret, TEST_USER.password, tokens.access_token]) assert.ok(!everything.includes(secret));
  });

  it("starts a new trace for a request without traceparent, and refuses to be a child of a malformed one", async () => {
    const before = new Set(receiver.received.spans.map((s) => s.spanId));
    const res = await postForm(
      `${instance.url}/api/login/oauth/access_token`,
      { grant_type: "client_credentials" },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), traceparent: "00-zz-not-a-trace-01" },
    );
    assert.equal(res.status, 200);
    const request = await until("the new request span", () => receiver.received.spans.find((s) => !before.has(s.spanId) && s.kind === SERVER));
    assert.equal(request.parentSpanId || undefined, undefined);
    assert.match(request.traceId, /^[0-9a-f]{32}$/);
  });
});
