import type { IncomingMessage, ServerResponse } from "node:http";
import type { ClientAddressOf } from "../http/clientAddress.js";
import type { Domain } from "../domain/index.js";
import type { DoorAnswer, PathPattern } from "../http/door.js";
import { readBody } from "../http/params.js";
import { sendError, sendJson } from "../http/answers.js";
import type { LogUnexpected } from "../http/requestContext.js";
import { REGISTRATION_PATH } from "../oauth/discovery.js";
import { OAuthError } from "../oauth/errors.js";

export interface RegistrationEndpointOptions {
  maxBodyBytes: number;
  log: LogUnexpected;
  clientAddress: ClientAddressOf;
}

const CLIENT_PATH = /^\/api\/oauth\/register\/([A-Za-z0-9_-]{1,200})$/;

/** Its paths, as request labels. */
export const REGISTRATION_ROUTES: readonly (string | PathPattern)[] = [
  REGISTRATION_PATH,
  { pattern: CLIENT_PATH, label: `${REGISTRATION_PATH}/{client_id}` },
];

const bearer = (req: IncomingMessage) => /^Bearer +(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];

/** The JSON body of a registration: RFC 7591 §3.1 sends `application/json`. */
async function jsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const mediaType = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "application/json") throw new OAuthError("invalid_client_metadata", "client metadata is sent as application/json (RFC 7591 §3.1)");
  const text = await readBody(req, limit);
  try {
    return JSON.parse(text);
  } catch {
    throw new OAuthError("invalid_client_metadata", "the body is not valid JSON");
  }
}

/**
 * Dynamic client registration, hand-written beside the REST facade since
 * RFC 7591's JSON is no proto message (`jwks` is any JWK Set):
 * POST /api/oauth/register (RFC 7591 §3), and GET, PUT and DELETE of
 * /api/oauth/register/<client_id> with the registration access token
 * (RFC 7592 §2). Returns false for any other path.
 */
export function createRegistrationEndpoint(domain: Domain, options: RegistrationEndpointOptions) {
  const registrar = domain.registration;

  async function serve(req: IncomingMessage, res: ServerResponse, clientId: string | undefined): Promise<void> {
    const method = req.method ?? "GET";
    if (clientId === undefined) {
      if (method !== "POST") return methodNotAllowed(res, ["POST"]);
      registrar.admit(bearer(req));
      const registered = await registrar.register(await jsonBody(req, options.maxBodyBytes), options.clientAddress(req));
      // RFC 7591 §3.2.1: 201 Created, never cached.
      return sendJson(res, 201, registered);
    }
    if (registrar.policy.mode === "off") throw new OAuthError("not_found", "client registration is off");
    switch (method) {
      case "GET":
        return sendJson(res, 200, await registrar.read(clientId, bearer(req)));
      case "PUT":
        return sendJson(res, 200, await registrar.update(clientId, bearer(req), await jsonBody(req, options.maxBodyBytes)));
      case "DELETE":
        await registrar.delete(clientId, bearer(req));
        res.writeHead(204, { "cache-control": "no-store" });
        return void res.end();
      default:
        return methodNotAllowed(res, ["GET", "PUT", "DELETE"]);
    }
  }

  return function handleRegistration(req: IncomingMessage, res: ServerResponse, url: URL): DoorAnswer {
    const clientId = CLIENT_PATH.exec(url.pathname)?.[1];
    if (url.pathname !== REGISTRATION_PATH && clientId === undefined) return false;
    return serve(req, res, clientId).catch((err: unknown) => {
      if (!req.complete && req.httpVersionMajor === 1) res.setHeader("connection", "close");
      sendError(res, err, options.log);
    });
  };
}

function methodNotAllowed(res: ServerResponse, allowed: string[]): void {
  sendJson(res, 405, { error: "invalid_request", error_description: `use ${allowed.join(" or ")}` }, { allow: allowed.join(", ") });
}
