import { randomUUID } from "node:crypto";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { errorFields, type Logger } from "../log.js";
import { annotateRequest, openRequestContext, type RequestContext } from "../requestContext.js";
import type { PromMetrics } from "./metrics.js";

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

/**
 * The request chain's outer layer: a request id (taken from X-Request-Id or
 * made up, and echoed back), a context the layers below annotate, and at the
 * end one log line and the HTTP metrics.
 */
export function observeRequests(handler: TargetHandler, options: ObserveOptions): Handler {
  const { logger, metrics } = options;
  return (req, res) => {
    const started = process.hrtime.bigint();
    const sent = req.headers["x-request-id"];
    const context: RequestContext = { requestId: typeof sent === "string" && REQUEST_ID.test(sent) ? sent : randomUUID() };
    res.setHeader("x-request-id", context.requestId);
    const url = parseTarget(req.url);
    const pathname = url?.pathname ?? "";
    const route = options.routeOf(pathname);
    const method = METHODS.has(req.method ?? "") ? req.method! : "OTHER";
    const grpcCall = isGrpc(req);

    res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = res.statusCode;
      // A trailers-only gRPC answer carries its status as a header.
      const grpc = context.grpcStatus ?? (grpcCall ? String(res.getHeader("grpc-status") ?? "") : "");
      metrics?.observeRequest({ route, method, status, grpcStatus: grpc, seconds });

      // Assigned one by one, not spread in: spreading conditional objects made this the costliest line of the layer.
      const fields: Record<string, unknown> = { request_id: context.requestId, method, route };
      if (route === "other") fields.path = pathname.slice(0, 200);
      fields.status = status;
      if (grpc) fields.grpc_status = Number(grpc);
      fields.duration_ms = Math.round(seconds * 1e4) / 10;
      if (context.clientId) fields.client_id = context.clientId;
      if (context.oauthError) fields.oauth_error = context.oauthError;
      if (!res.writableFinished) fields.aborted = true;
      if (logger.enabled("debug")) fields.headers = req.headers; // secrets among them are redacted
      // Only failures of our own carry a stack; a client's mistake is not an error here.
      if (context.unexpected !== undefined) logger.error("request", { ...fields, ...errorFields(context.unexpected) });
      else if (status >= 500) logger.error("request", fields);
      else if (options.quietRoutes.has(route)) logger.debug("request", fields);
      else logger.info("request", fields);
    });
    openRequestContext(req, context);
    handler(req, res, url);
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
