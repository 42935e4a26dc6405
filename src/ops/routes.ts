import { ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import type { DescService } from "@bufbuild/protobuf";
import type { PathPattern } from "../http/door.js";

/**
 * The route label of a request path, from a bounded set so metrics cannot
 * grow without limit: a REST path of the contract, a hand-written path
 * (probes, browser pages) or its pattern's label, `connect:<service>/<method>`
 * for an RPC over gRPC, gRPC-Web or Connect, and `other` for everything else.
 */
export function routeNamer(
  services: readonly DescService[],
  restPaths: Iterable<string>,
  handWritten: Iterable<string | PathPattern>,
): (pathname: string) => string {
  const paths = new Set<string>(restPaths);
  const patterns: PathPattern[] = [];
  for (const route of handWritten) {
    if (typeof route === "string") paths.add(route);
    else patterns.push(route);
  }
  const rpcs = new Map<string, string>();
  for (const service of [...services, ServerReflection]) {
    for (const method of service.methods) rpcs.set(`/${service.typeName}/${method.name}`, `connect:${service.typeName}/${method.name}`);
  }
  return (pathname) =>
    paths.has(pathname) ? pathname : (rpcs.get(pathname) ?? patterns.find((p) => p.pattern.test(pathname))?.label ?? "other");
}
