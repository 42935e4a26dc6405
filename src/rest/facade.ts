import type { IncomingMessage, ServerResponse } from "node:http";
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type { ClientAddressOf } from "../http/clientAddress.js";
import type { DoorAnswer } from "../http/door.js";
import { OAuthError } from "../oauth/errors.js";
import { requestContextOf, type LogUnexpected } from "../http/requestContext.js";
import { headerFields, plainHandlerContext } from "../rpc/handlerContext.js";
import { callContextValues } from "../rpc/headers.js";
import type { ServiceBinding } from "../rpc/services.js";
import { collectParams, readBody, refuseCredentialsInQuery } from "../http/params.js";
import { toMessage } from "./decode.js";
import { restJson } from "./encode.js";
import { sendError, sendJson } from "../http/answers.js";
import { buildRouteTable, type RestRoute } from "./routes.js";

export interface RestFacadeOptions {
  maxBodyBytes: number;
  log: LogUnexpected;
  clientAddress: ClientAddressOf;
  /** RFC 9728: the URL of this service's protected resource metadata, named in every Bearer challenge (userinfo, get-account). */
  resourceMetadata?: string;
}

type UnaryHandler = (req: unknown, ctx: unknown) => Promise<MessageInitShape<DescMessage>> | MessageInitShape<DescMessage>;

/**
 * The generated HTTP/JSON front door. It serves every RPC that has a
 * `google.api.http` option by calling the very implementation object that
 * Connect serves. Returns false when the path is not one of its routes.
 */
export function createRestFacade(bindings: readonly ServiceBinding[], options: RestFacadeOptions) {
  const table = buildRouteTable(bindings);
  const contextValues = callContextValues(options.clientAddress);

  return function handleRest(req: IncomingMessage, res: ServerResponse, url: URL): DoorAnswer {
    const byMethod = table.get(url.pathname);
    if (!byMethod) return false;
    const route = byMethod.get(req.method ?? "GET");
    if (!route) {
      sendJson(res, 405, { error: "invalid_request", error_description: `use ${[...byMethod.keys()].join(" or ")}` }, {
        allow: [...byMethod.keys()].join(", "),
      });
      return true;
    }
    return serve(route, url, req, res).catch((err: unknown) => {
      // The client may still be sending a body we stopped reading (413):
      // reusing this connection would then fail, so ask it not to.
      if (!req.complete && req.httpVersionMajor === 1) res.setHeader("connection", "close");
      sendError(res, err, options.log, options.resourceMetadata);
    });
  };

  async function serve(route: RestRoute, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Before the body is read: the call is refused whatever else it says.
    refuseCredentialsInQuery(url);
    if (route.httpMethod === "POST") refuseAccessTokenInQuery(url);
    const body = route.body === "*" ? await readBody(req, options.maxBodyBytes) : "";
    if (route.body !== "*" && Number(req.headers["content-length"] ?? 0) > 0) {
      throw new OAuthError("invalid_request", "this endpoint takes no request body");
    }
    const params = collectParams(url, req.headers["content-type"], body);
    if (route.httpMethod === "POST") refuseAccessTokenOutsideForm(params, req.headers["content-type"]);
    const request = toMessage(route.method.input, params);
    const ctx = plainHandlerContext({
      service: route.binding.service,
      method: route.method,
      protocolName: "rest",
      req,
      url: url.href,
      values: contextValues(req, requestContextOf(req)),
    });
    const impl = (route.binding.impl as Record<string, UnaryHandler>)[route.method.localName]!;
    const response = await impl(request, ctx);
    sendJson(res, route.successStatus, restJson(route.method.output, response), headerFields(ctx.responseHeader));
  }
}

/** An access token as a parameter: its RFC 6750 name and Casdoor's query name. */
const ACCESS_TOKEN_PARAMS = ["access_token", "accessToken"] as const;

/**
 * RFC 6750 §2.2: a POST carries an access token parameter in its form body.
 * In the query string of a POST it would land in access logs for no reason
 * (GET /api/userinfo takes it there, as Casdoor's clients send it).
 */
function refuseAccessTokenInQuery(url: URL): void {
  if (!url.search) return;
  for (const name of ACCESS_TOKEN_PARAMS) {
    if (url.searchParams.has(name)) {
      throw new OAuthError("invalid_request", `a POST takes ${name} in its form body or as a Bearer header, never in the URL`);
    }
  }
}

/** RFC 6750 §2.2: the body parameter is form-encoded; a JSON body does not carry it. */
function refuseAccessTokenOutsideForm(params: ReadonlyMap<string, string>, contentType: string | undefined): void {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType === "application/x-www-form-urlencoded") return;
  for (const name of ACCESS_TOKEN_PARAMS) {
    if (params.has(name)) throw new OAuthError("invalid_request", `${name} is accepted only in an application/x-www-form-urlencoded body`);
  }
}
