import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Http2ServerResponse, IncomingHttpHeaders as StreamHeaders, ServerHttp2Stream } from "node:http2";
import { errorFields, type Logger } from "../shared/log.js";
import { annotateRequest, openRequestContext, type RequestContext } from "../http/requestContext.js";
import type { PromMetrics } from "./metrics.js";
import { openRequestSpan, tracing, type RequestSpan } from "../shared/tracing.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
/** What the observed chain gets: the request target parsed once, or undefined when it does not parse. */
export type TargetHandler = (req: IncomingMessage, res: ServerResponse, url: URL | undefined) => void;

export interface ObserveOptions {
  logger: Logger;
  /** Absent when metrics are off. */
  metrics?: PromMetrics;
  routeOf: (pathname: string) => string;
  /** Routes logged at debug level only: probes and scrapes would drown the rest. */
  quietRoutes: ReadonlySet<string>;
}

// A caller's request id is echoed only if it is short and plain, so it
// cannot forge log content or bloat headers.
const REQUEST_ID = /^[A-Za-z0-9._:+/=-]{1,128}$/;
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

function parseTarget(target: string | undefined): URL | undefined {
  try {
    return new URL(target ?? "/", "http://localhost");
  } catch {
    return undefined;
  }
}

/** What the log line and the metrics say of a request once it is over. */
interface Outcome {
  route: string;
  method: string;
  pathname: string;
  status: number;
  /** The grpc-status it was answered with; "" for anything but gRPC. */
  grpcStatus: string;
  /** Whether the answer was cut off before its end. */
  aborted: boolean;
  headers: IncomingHttpHeaders;
}

/** The request's one log line and its metrics. */
function recordOutcome(options: ObserveOptions, context: RequestContext, started: bigint, outcome: Outcome): void {
  const { logger, metrics } = options;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const { route, status, grpcStatus } = outcome;
  metrics?.observeRequest({ route, method: outcome.method, status, grpcStatus, seconds });

  // Assigned one by one, not spread in: spreading conditional objects made this the costliest line of the layer.
  const fields: Record<string, unknown> = { request_id: context.requestId, method: outcome.method, route };
  if (route === "other") fields.path = outcome.pathname.slice(0, 200);
  fields.status = status;
  if (grpcStatus) fields.grpc_status = Number(grpcStatus);
  fields.duration_ms = Math.round(seconds * 1e4) / 10;
  if (context.clientId) fields.client_id = context.clientId;
  if (context.oauthError) fields.oauth_error = context.oauthError;
  if (context.adminActor) {
    fields.admin_actor = context.adminActor.name;
    fields.admin_actor_id = context.adminActor.id;
  }
  if (outcome.aborted) fields.aborted = true;
  // An audit event the request caused rides on its line: `event`, `outcome`, `actor`, `details`...
  if (context.auditEvent) Object.assign(fields, context.auditEvent);
  if (logger.enabled("debug")) fields.headers = outcome.headers; // secrets among them are redacted
  // Only failures of our own carry a stack; a client's mistake is not an error here.
  if (context.unexpected !== undefined) logger.error("request", { ...fields, ...errorFields(context.unexpected) });
  else if (status >= 500) logger.error("request", fields);
  else if (options.quietRoutes.has(route)) logger.debug("request", fields);
  // Plain data (strings, numbers, the headers): one JSON.stringify, not pino's field-by-field serializer.
  else logger.infoPlain("request", fields);
}

/** What a request's span says from the start: the route, never the query string. */
function requestAttributes(context: RequestContext, method: string, route: string, pathname: string) {
  return {
    "http.request.method": method,
    "http.route": route,
    "url.path": pathname.slice(0, 200),
    "identity.request_id": context.requestId,
  };
}

/** What a request's span learns by its end; a 5xx answer or an unexpected error marks it failed. */
function endRequestSpan(traced: RequestSpan, context: RequestContext, outcome: Outcome): void {
  traced.setAttributes({ "http.response.status_code": outcome.status });
  if (outcome.grpcStatus) traced.setAttributes({ "rpc.grpc.status_code": Number(outcome.grpcStatus) });
  if (context.clientId) traced.setAttributes({ "identity.client_id": context.clientId.slice(0, 200) });
  if (context.oauthError) traced.setAttributes({ "identity.oauth_error": context.oauthError });
  if (outcome.aborted) traced.setAttributes({ "identity.aborted": true });
  const grpcFailed = ["2", "4", "13", "14", "15"].includes(outcome.grpcStatus);
  traced.end(outcome.status >= 500 || grpcFailed || context.unexpected !== undefined);
}

/** A context for the request's log line, under the caller's X-Request-Id when that is usable. */
function openContext(headers: IncomingHttpHeaders): RequestContext {
  const sent = headers["x-request-id"];
  return { requestId: typeof sent === "string" && REQUEST_ID.test(sent) ? sent : randomUUID() };
}

/**
 * The request chain's outer layer: a request id (taken from X-Request-Id or
 * made up, and echoed back), a context the layers below annotate, and at the
 * end one log line and the HTTP metrics.
 */
export function observeRequests(handler: TargetHandler, options: ObserveOptions): Handler {
  return (req, res) => {
    const started = process.hrtime.bigint();
    const context = openContext(req.headers);
    res.setHeader("x-request-id", context.requestId);
    const url = parseTarget(req.url);
    const pathname = url?.pathname ?? "";
    const route = options.routeOf(pathname);
    const method = METHODS.has(req.method ?? "") ? req.method! : "OTHER";
    const grpcCall = isGrpc(req);

    const traced = tracing() ? openRequestSpan(`${method} ${route}`, req.headers, requestAttributes(context, method, route, pathname)) : undefined;

    res.once("close", () => {
      // A trailers-only gRPC answer carries its status as a header.
      const grpcStatus = context.grpcStatus ?? (grpcCall ? String(res.getHeader("grpc-status") ?? sentGrpcStatus(req, res)) : "");
      const outcome: Outcome = {
        route,
        method,
        pathname,
        status: req.httpVersionMajor === 2 ? streamStatus(res) : res.statusCode,
        grpcStatus,
        aborted: !res.writableFinished,
        headers: req.headers,
      };
      recordOutcome(options, context, started, outcome);
      if (traced) endRequestSpan(traced, context, outcome);
    });
    openRequestContext(req, context);
    if (traced) traced.run(() => handler(req, res, url));
    else handler(req, res, url);
  };
}

/**
 * What an HTTP/2 request was answered with. The request timeout answers on
 * the stream itself (http/transport.ts), under the response object, whose
 * own status then says nothing.
 */
function streamStatus(res: ServerResponse): number {
  const sent = (res as unknown as Http2ServerResponse).stream?.sentHeaders?.[":status"];
  return sent === undefined ? res.statusCode : Number(sent);
}

function sentGrpcStatus(req: IncomingMessage, res: ServerResponse): string {
  return req.httpVersionMajor === 2 ? String((res as unknown as Http2ServerResponse).stream?.sentHeaders?.["grpc-status"] ?? "") : "";
}

/** A front door that serves HTTP/2 streams as they come, before Node's compatibility layer. */
export interface StreamDoor<Claim> {
  /** What the door needs to serve the stream, or undefined when the stream is not its own. */
  claim(headers: StreamHeaders): Claim | undefined;
  /** Answers the stream, echoing the context's request id. */
  serve(claim: Claim, stream: ServerHttp2Stream, headers: StreamHeaders, context: RequestContext): void;
}

/** Whether a stream was served; the compatibility layer gets the rest. */
export type StreamHandler = (stream: ServerHttp2Stream, headers: StreamHeaders) => boolean;

/** observeRequests for the streams a stream door serves: the same request id, log line and metrics. */
export function observeStreams<Claim>(door: StreamDoor<Claim>, options: ObserveOptions): StreamHandler {
  return (stream, headers) => {
    const claim = door.claim(headers);
    if (claim === undefined) return false;
    const started = process.hrtime.bigint();
    const context = openContext(headers);
    const pathname = headers[":path"] ?? "";
    const method = headers[":method"] ?? "OTHER";
    const route = options.routeOf(pathname);
    const traced = tracing() ? openRequestSpan(`${method} ${route}`, headers, requestAttributes(context, method, route, pathname)) : undefined;
    stream.once("close", () => {
      const outcome: Outcome = {
        route,
        method,
        pathname,
        status: Number(stream.sentHeaders?.[":status"] ?? 200),
        grpcStatus: context.grpcStatus ?? String(stream.sentHeaders?.["grpc-status"] ?? ""),
        aborted: !stream.writableFinished,
        headers,
      };
      recordOutcome(options, context, started, outcome);
      if (traced) endRequestSpan(traced, context, outcome);
    });
    if (traced) traced.run(() => door.serve(claim, stream, headers, context));
    else door.serve(claim, stream, headers, context);
    return true;
  };
}

/** gRPC and gRPC-Web: the only calls that answer with a grpc-status. */
export const isGrpc = (req: IncomingMessage) => req.headers["content-type"]?.startsWith("application/grpc") === true;

/**
 * Notes the grpc-status trailer of a call Connect answers, for its log line
 * and metrics. Only there: on Node 20, a property added to a response object
 * after it is made (this replaces `addTrailers`) keeps the request's garbage
 * alive until the next full collection (see docs/performance.md), and our
 * own unary gRPC door notes its status itself.
 */
export function watchGrpcTrailer(res: ServerResponse, context: RequestContext | undefined): void {
  const addTrailers = res.addTrailers.bind(res);
  res.addTrailers = (headers: OutgoingHttpHeaders | readonly [string, string][]) => {
    if (!Array.isArray(headers)) {
      const status = (headers as OutgoingHttpHeaders)["grpc-status"];
      if (status !== undefined) annotateRequest(context, { grpcStatus: String(status) });
    }
    addTrailers(headers);
  };
}
