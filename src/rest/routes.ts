import { getOption, type DescMethod } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { ServiceBinding } from "../rpc/services.js";

/** One REST path bound to one RPC, read from its `google.api.http` option. */
export interface RestRoute {
  httpMethod: string;
  path: string;
  binding: ServiceBinding;
  method: DescMethod;
  /** `*` when the body maps onto the whole request message. */
  body: string;
  /** The HTTP status of a success. */
  successStatus: number;
}

/** Methods whose success is not 200 OK, by full name. */
const SUCCESS_STATUS: Readonly<Record<string, number>> = {
  // RFC 9126 §2.2: a pushed authorization request answers 201 Created.
  "identity.v1.PushedAuthorizationService.PushAuthorizationRequest": 201,
};

/** path -> HTTP method -> route. Built from the contract, never listed by hand. */
export type RouteTable = Map<string, Map<string, RestRoute>>;

export function buildRouteTable(bindings: readonly ServiceBinding[]): RouteTable {
  const table: RouteTable = new Map();
  for (const binding of bindings) {
    for (const method of binding.service.methods) {
      const rule = getOption(method, http);
      // An additional binding is one more path or verb for the same RPC; it
      // may not nest further ones (google/api/http.proto).
      for (const one of [rule, ...rule.additionalBindings]) {
        const { case: verb, value } = one.pattern;
        if (verb === undefined || verb === "custom") continue;
        const path = value as string;
        if (path.includes("{")) throw new Error(`${method.name}: path templates are not supported by the REST facade`);
        const httpMethod = verb.toUpperCase();
        const byMethod = table.get(path) ?? new Map<string, RestRoute>();
        if (byMethod.has(httpMethod)) throw new Error(`${method.name}: ${httpMethod} ${path} is bound twice`);
        const successStatus = SUCCESS_STATUS[`${binding.service.typeName}.${method.name}`] ?? 200;
        byMethod.set(httpMethod, { httpMethod, path, binding, method, body: one.body, successStatus });
        table.set(path, byMethod);
      }
    }
  }
  return table;
}
