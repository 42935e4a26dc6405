import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startTracing, tracesUrl, tracingWanted } from "../../src/app/tracing.js";
import { UpstreamClient } from "../../src/federation/upstream.js";
import { attribute, startReceiver } from "../support/otlpReceiver.js";
import { silentLogger } from "../../src/shared/log.js";
import { installTracer, openRequestSpan, span, tracing, type Tracer } from "../../src/shared/tracing.js";

describe("tracing (issue 29 §6)", () => {
  afterEach(() => installTracer(undefined));

  it("is wanted only when an OTLP endpoint is set and the SDK is not disabled", () => {
    assert.equal(tracingWanted({}), false);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" }), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" }), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_EXPORTER: "none" }), false);
  });

  it("without the variables installs nothing, and the facade only runs the work", async () => {
    assert.equal(await startTracing({}, silentLogger), undefined);
    assert.equal(tracing(), false);
    assert.equal(await span("db SELECT", "client", undefined, async () => 42), 42);
    assert.equal(openRequestSpan("GET /", {}, {}), undefined);
  });

  it("hands spans to the installed tracer", async () => {
    const seen: string[] = [];
    const fake: Tracer = {
      span: (name, _kind, _attributes, fn) => (seen.push(name), fn()),
      request: (name) => (seen.push(name), { run: (fn) => fn(), setAttributes: () => {}, end: () => {} }),
    };
    installTracer(fake);
    assert.equal(tracing(), true);
    assert.equal(await span("jwt sign", "internal", {}, async () => "signed"), "signed");
    openRequestSpan("POST /token", {}, {})!.end(false);
    assert.deepEqual(seen, ["jwt sign", "POST /token"]);
  });

  it("sends spans to /v1/traces under the general endpoint, or to the traces endpoint as given", () => {
    assert.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }), "http://c:4318/v1/traces");
    assert.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t/x" }), "http://t/x");
  });

  it("with the SDK: an upstream call is a client span under the request's, naming the host but not the query or the secret", async () => {
    const receiver = await startReceiver();
    const provider = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end('{"access_token":"upstream-token-xyz"}'));
    await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
    const port = (provider.address() as AddressInfo).port;
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }, silentLogger);
    try {
      assert.ok(tracing);
      const request = openRequestSpan("GET /callback", { traceparent: "00-11111111111111111111111111111111-2222222222222222-01" }, {})!;
      const body = await request.run(() =>
        new UpstreamClient({ timeoutMs: 5000, maxBodyBytes: 65536 }).requestJson("token", `http://127.0.0.1:${port}/token?client_secret=shh-upstream`, {
          method: "POST",
          body: "code=the-code",
        }),
      );
      request.end(false);
      assert.equal(body.access_token, "upstream-token-xyz");
      // Outside a request: no span at all.
      await span("db SELECT", "client", {}, async () => 1);
      await tracing.shutdown(); // exports what is buffered
      const spans = receiver.received.spans;
      const upstream = spans.find((s) => s.name === "upstream token")!;
      const parent = spans.find((s) => s.name === "GET /callback")!;
      assert.ok(upstream && parent);
      assert.equal(upstream.parentSpanId, parent.spanId);
      assert.equal(parent.parentSpanId, "2222222222222222");
      assert.equal(attribute(upstream, "server.address"), "127.0.0.1");
      assert.equal(attribute(upstream, "identity.upstream.step"), "token");
      assert.equal(spans.filter((s) => s.name === "db SELECT").length, 0);
      const everything = receiver.bodies.join("\n");
      for (const secret of ["shh-upstream", "the-code", "upstream-token-xyz"]) assert.ok(!everything.includes(secret), secret);
    } finally {
      await tracing?.shutdown().catch(() => {});
      await new Promise((resolve) => provider.close(resolve));
      await new Promise((resolve) => receiver.server.close(resolve));
    }
  });
});
