import type { EventCarrier } from "../shared/audit.js";

/**
 * What the request log line knows about the request being served. The
 * request chain opens one per request; code below it (RPC implementations,
 * error mappers) fills in what only it learns.
 *
 * It travels with the request object (and, inside Connect handlers, in the
 * call's context values), not in AsyncLocalStorage: on Node 20 that installs
 * promise hooks which cost about a quarter of the CPU of a token
 * introspection.
 */
export interface RequestContext extends EventCarrier {
  readonly requestId: string;
  /** The client the request names (as presented; not proof of authentication). */
  clientId?: string;
  /** Who made an admin call, once let in (rpc/adminAuth.ts): every admin change is logged with its actor. */
  adminActor?: { readonly kind: string; readonly id: string; readonly name: string };
  /** The OAuth error code the request was answered with. */
  oauthError?: string;
  /** A gRPC or gRPC-Web call's status, which travels in a trailer while the HTTP status stays 200. */
  grpcStatus?: string;
  /** An unexpected error, logged with its stack on the request's line. */
  unexpected?: unknown;
}

/** Where an unexpected error goes: the request's own log line when there is one. */
export type LogUnexpected = (err: unknown, context: RequestContext | undefined) => void;

// A property, not a WeakMap entry: every WeakMap entry whose key is a young
// object is extra work for each young-generation collection until it goes.
const CONTEXT = Symbol("requestContext");
type WithContext = { [CONTEXT]?: RequestContext };

/** Attach `context` to a node:http or node:http2 request. */
export function openRequestContext(req: object, context: RequestContext): void {
  (req as WithContext)[CONTEXT] = context;
}

export function requestContextOf(req: object | undefined): RequestContext | undefined {
  return (req as WithContext | undefined)?.[CONTEXT];
}

/** Add facts to a request's log line; a no-op without one. */
export function annotateRequest(context: RequestContext | undefined, facts: Omit<Partial<RequestContext>, "requestId">): void {
  if (context) Object.assign(context, facts);
}
