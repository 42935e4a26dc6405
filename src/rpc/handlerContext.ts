import type { IncomingMessage } from "node:http";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ContextValues, HandlerContext } from "@connectrpc/connect";

// A call without a deadline is not cancelled mid-way (the door answers or
// the connection closes; no implementation watches the signal), so such
// calls share one signal that never fires.
const NEVER_ABORTED = new AbortController().signal;

/**
 * The HandlerContext our own doors (the REST facade, unary gRPC) hand to the
 * service implementation. Connect's createHandlerContext builds a deadline
 * signal, a linked abort controller and copies of every header set per
 * call; on the REST path that was about 6% of an introspection's CPU for
 * things no implementation reads.
 */
export function plainHandlerContext(init: {
  service: DescService;
  method: DescMethod;
  protocolName: string;
  req: Pick<IncomingMessage, "method" | "headers">;
  /** The request's URL, which only labels the call. */
  url: string;
  values: ContextValues;
  /** The caller's deadline, when it set one. */
  deadline?: { signal: AbortSignal; timeoutMs: number };
}): HandlerContext {
  const deadline = init.deadline;
  const endsAt = deadline && Date.now() + deadline.timeoutMs;
  return {
    service: init.service,
    method: init.method,
    protocolName: init.protocolName,
    requestMethod: init.req.method ?? "GET",
    url: init.url,
    signal: deadline?.signal ?? NEVER_ABORTED,
    timeoutMs: () => (endsAt === undefined ? undefined : endsAt - Date.now()),
    requestHeader: new IncomingHeaders(init.req.headers) as unknown as Headers,
    responseHeader: new Headers(),
    // Not a lazy getter: an object literal with a getter gets a hidden class
    // of its own, which made it 8x slower to make than this one with its
    // Headers, and Connect's per-call copy of it (Object.assign) ~10x slower.
    responseTrailer: new Headers(),
    values: init.values,
  };
}

/** A `Headers`' fields as the plain object Node's writeHead and addTrailers take. */
export function headerFields(headers: Headers, into: Record<string, string> = {}): Record<string, string> {
  headers.forEach((value, key) => (into[key] = value));
  return into;
}

/** Headers' methods, declared as methods so a subclass may override them. */
interface HeaderMethods {
  get(name: string): string | null;
  has(name: string): boolean;
  append(name: string, value: string): void;
  set(name: string, value: string): void;
  delete(name: string): void;
  getSetCookie(): string[];
  forEach(callback: (value: string, key: string, parent: HeaderMethods) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

/**
 * The request's headers as a `Headers`, read from the object Node has
 * already parsed. Copying every header into a `Headers` on each call was ~3%
 * of an introspection's CPU, and the implementations read one or two of them
 * (authorization, cookie); anything that changes or walks them gets the copy.
 */
class IncomingHeaders extends (Headers as unknown as new () => HeaderMethods) {
  #source: IncomingMessage["headers"] | undefined;

  constructor(source: IncomingMessage["headers"]) {
    super();
    this.#source = source;
  }

  override get(name: string): string | null {
    if (!this.#source) return super.get(name);
    // Pseudo-headers (HTTP/2) are not headers; Node has lower-cased every name.
    const value = name.startsWith(":") ? undefined : this.#source[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }

  override has(name: string): boolean {
    return this.get(name) !== null;
  }

  /** Copies the headers in, once, before the first call that changes or walks them. */
  #copy(): void {
    const source = this.#source;
    if (!source) return;
    this.#source = undefined;
    for (const [key, value] of Object.entries(source)) {
      if (value === undefined || key.startsWith(":")) continue;
      for (const v of Array.isArray(value) ? value : [value]) super.append(key, v);
    }
  }

  override append(name: string, value: string): void {
    this.#copy();
    super.append(name, value);
  }
  override set(name: string, value: string): void {
    this.#copy();
    super.set(name, value);
  }
  override delete(name: string): void {
    this.#copy();
    super.delete(name);
  }
  override getSetCookie(): string[] {
    this.#copy();
    return super.getSetCookie();
  }
  override forEach(callback: (value: string, key: string, parent: HeaderMethods) => void, thisArg?: unknown): void {
    this.#copy();
    super.forEach(callback, thisArg);
  }
  override entries(): IterableIterator<[string, string]> {
    this.#copy();
    return super.entries();
  }
  override keys(): IterableIterator<string> {
    this.#copy();
    return super.keys();
  }
  override values(): IterableIterator<string> {
    this.#copy();
    return super.values();
  }
  override [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}
