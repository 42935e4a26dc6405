import assert from "node:assert/strict";
import { startTracing, tracingWanted } from "../../src/app/tracing.js";
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
});
