import type { DescService } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { adminCaller } from "../shared/audit.js";
import { adminActorOf } from "./adminActor.js";
import type { MethodGuards } from "./guards.js";
import { clientAddressOf } from "./headers.js";

type AnyMethod = (req: unknown, ctx: HandlerContext) => unknown;

/**
 * The implementation with each `admin`-guarded method run as its admin
 * caller (shared/audit.ts adminCaller): the domain code that makes the
 * change records who made it, and from where, in its audit event. Applied
 * inside the guards, which name the caller (adminActorOf).
 */
export function asAdminCalls<S extends DescService>(service: S, impl: ServiceImpl<S>, guards: MethodGuards<S>): ServiceImpl<S> {
  const methods = impl as unknown as Record<string, AnyMethod>;
  const declared = guards as unknown as Record<string, readonly string[] | undefined>;
  const wrapped: Record<string, AnyMethod> = { ...methods };
  for (const { localName } of service.methods) {
    const method = methods[localName];
    if (!method || !declared[localName]?.includes("admin")) continue;
    wrapped[localName] = (req, ctx) =>
      adminCaller.run({ actor: adminActorOf(ctx), clientAddress: clientAddressOf(ctx) }, () => method.call(impl, req, ctx));
  }
  return wrapped as unknown as ServiceImpl<S>;
}
