import { ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { buildRouteTable } from "../rest/routes.js";
import type { ServiceBinding } from "../rpc/services.js";

/**
 * The route label of a request path, from a bounded set so metrics cannot
 * grow without limit: a REST path of the contract, a hand-written path
 * (probes, browser pages), `connect:<service>/<method>` for an RPC over
 * gRPC, gRPC-Web or Connect, and `other` for everything else.
 */
export function routeNamer(bindings: readonly ServiceBinding[], handWrittenPaths: Iterable<string>): (pathname: string) => string {
  const paths = new Set([...buildRouteTable(bindings).keys(), ...handWrittenPaths]);
  const rpcs = new Map<string, string>();
  for (const service of [...bindings.map((b) => b.service), ServerReflection]) {
    for (const method of service.methods) rpcs.set(`/${service.typeName}/${method.name}`, `connect:${service.typeName}/${method.name}`);
  }
  return (pathname) => (paths.has(pathname) ? pathname : (rpcs.get(pathname) ?? "other"));
}
