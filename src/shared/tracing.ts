/**
 * Traces, as every layer may open them: a span around a database call, a
 * signature, an upstream call, and the request's own span. This facade knows
 * nothing of OpenTelemetry: src/app installs a tracer when the OTEL_*
 * variables ask for one (src/app/tracing.ts), and until then every function
 * here is a plain call that runs its work and opens nothing.
 *
 * Attributes name what was done (a route, a table, a key id, a host), never
 * a value a caller sent: no token, password, secret or query string.
 */

export type SpanAttributes = Record<string, string | number | boolean>;

/** A client span calls out of the process (the database, a provider); an internal one does work inside it. */
export type SpanKind = "internal" | "client";

/** The request's own span, opened where its context opens and ended when its answer is over. */
export interface RequestSpan {
  /** Runs `fn` with this span as the parent of the spans opened under it. */
  run<T>(fn: () => T): T;
  setAttributes(attributes: SpanAttributes): void;
  /** Ends the span; `failed` marks it as an error (a 5xx answer, a gRPC internal error). */
  end(failed: boolean): void;
}

/** What src/app installs. */
export interface Tracer {
  span<T>(name: string, kind: SpanKind, attributes: SpanAttributes | undefined, fn: () => Promise<T>): Promise<T>;
  /** A server span, child of the caller's span when `headers` carry a W3C traceparent. */
  request(name: string, headers: Readonly<Record<string, string | string[] | undefined>>, attributes: SpanAttributes): RequestSpan;
}

let installed: Tracer | undefined;

/** Installs the process's tracer (undefined: back to no tracing). */
export function installTracer(tracer: Tracer | undefined): void {
  installed = tracer;
}

/** Whether a tracer is installed (to skip building attributes nobody reads). */
export function tracing(): boolean {
  return installed !== undefined;
}

/** Runs `fn` inside a span named `name`, a child of the current one; without a tracer, just `fn()`. */
export function span<T>(name: string, kind: SpanKind, attributes: SpanAttributes | undefined, fn: () => Promise<T>): Promise<T> {
  return installed === undefined ? fn() : installed.span(name, kind, attributes, fn);
}

/** The span of a request being served; undefined without a tracer. */
export function openRequestSpan(
  name: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  attributes: SpanAttributes,
): RequestSpan | undefined {
  return installed === undefined ? undefined : installed.request(name, headers, attributes);
}
