import { installTracer, type RequestSpan, type SpanAttributes, type SpanKind, type Tracer } from "../shared/tracing.js";
import type { Logger } from "../shared/log.js";
import { packageVersion } from "./version.js";

/** What stops tracing: exports the spans still buffered. */
export interface Tracing {
  shutdown(): Promise<void>;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Whether the standard variables ask for traces: an OTLP endpoint, and the SDK not disabled. */
export function tracingWanted(env: Env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return false;
  if ((env.OTEL_TRACES_EXPORTER ?? "").trim().toLowerCase() === "none") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts OpenTelemetry tracing when the standard variables ask for it, and
 * installs it behind src/shared/tracing.ts; otherwise loads nothing and
 * returns undefined. The SDK reads the rest of its variables itself
 * (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG),
 * OTEL_BSP_*, OTEL_EXPORTER_OTLP_(TRACES_)HEADERS/TIMEOUT). Spans go by
 * OTLP/HTTP, protobuf unless OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says
 * http/json. A caller's W3C traceparent (and tracestate) is accepted.
 */
export async function startTracing(env: Env, logger: Logger): Promise<Tracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf").trim();
  if (protocol !== "http/json" && protocol !== "http/protobuf") {
    logger.warn("tracing: only OTLP over HTTP is supported; using http/protobuf", { protocol });
  }
  const [api, core, sdk, resources] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/core"),
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/resources"),
  ]);
  const { OTLPTraceExporter } =
    protocol === "http/json" ? await import("@opentelemetry/exporter-trace-otlp-http") : await import("@opentelemetry/exporter-trace-otlp-proto");

  const version = packageVersion();
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ "service.name": "identity-service", "service.version": version }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.NodeTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(env) }))],
  });
  // The async-hooks context manager (parents follow the awaits) and the W3C propagators.
  provider.register({
    propagator: new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] }),
  });
  const tracer = provider.getTracer("identity-service", version);
  const { context, propagation, trace, ROOT_CONTEXT, SpanStatusCode } = api;
  const kinds: Record<SpanKind, number> = { internal: api.SpanKind.INTERNAL, client: api.SpanKind.CLIENT };

  const installed: Tracer = {
    span(name, kind, attributes, fn) {
      // Only under a request: background work (migrations, cleanup, key reloads) would be a stream of lone root spans.
      if (trace.getSpan(context.active()) === undefined) return fn();
      return tracer.startActiveSpan(name, { kind: kinds[kind], attributes }, async (s) => {
        try {
          return await fn();
        } catch (err) {
          // The error's type only: messages may quote what a caller sent.
          s.setStatus({ code: SpanStatusCode.ERROR });
          s.setAttribute("error.type", errorType(err));
          throw err;
        } finally {
          s.end();
        }
      });
    },
    request(name, headers, attributes): RequestSpan {
      const parent = propagation.extract(ROOT_CONTEXT, headers);
      const s = tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes }, parent);
      const active = trace.setSpan(parent, s);
      return {
        run: (fn) => context.with(active, fn),
        setAttributes: (more: SpanAttributes) => void s.setAttributes(more),
        end(failed) {
          if (failed) s.setStatus({ code: SpanStatusCode.ERROR });
          s.end();
        },
      };
    },
  };
  installTracer(installed);
  logger.info("tracing: spans exported by OTLP/HTTP", {
    protocol: protocol === "http/json" ? protocol : "http/protobuf",
    service: resource.attributes["service.name"],
  });
  return {
    async shutdown() {
      installTracer(undefined);
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}

/** Where spans go: the traces endpoint as given, or /v1/traces under the general one (as the OTLP exporter spec says). */
export function tracesUrl(env: Env): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  return `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.trim().replace(/\/+$/, "")}/v1/traces`;
}

function errorType(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && /^[\w.-]{1,64}$/.test(code)) return code;
  return err instanceof Error ? err.name : typeof err;
}
