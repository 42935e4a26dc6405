import { AsyncLocalStorage } from "node:async_hooks";

/**
 * What the request log line knows about the request being served. The
 * request chain opens one per request; code below it (RPC implementations,
 * error mappers) fills in what only it learns, without passing it around.
 */
export interface RequestContext {
  readonly requestId: string;
  /** The client the request names (as presented; not proof of authentication). */
  clientId?: string;
  /** The OAuth error code the request was answered with. */
  oauthError?: string;
  /** An unexpected error, logged with its stack on the request's line. */
  unexpected?: unknown;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runInRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** Add facts to the current request's log line; a no-op outside a request. */
export function annotateRequest(facts: Omit<Partial<RequestContext>, "requestId">): void {
  const context = storage.getStore();
  if (context) Object.assign(context, facts);
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}
