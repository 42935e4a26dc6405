import type { DescService } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Domain } from "../domain/index.js";
import { requireAdmin } from "./adminAuth.js";
import { noStore } from "./headers.js";

/**
 * What runs before a method's own code:
 * - `admin`: the caller must present the admin token, or an admin user's
 *   access token with the admin scope (adminAuth.ts);
 * - `noStore`: the answer, success or failure, must not be cached.
 */
export type GuardName = "admin" | "noStore";

/**
 * Each method of a service with its guards, run in order; `[]` for none.
 * Every method is listed, so a new method's guards are a decision, not a default.
 */
export type MethodGuards<S extends DescService> = { readonly [M in keyof S["method"]]-?: readonly GuardName[] };

/** The same guards for every method of a service. */
export function everyMethod<S extends DescService>(service: S, guards: readonly GuardName[]): MethodGuards<S> {
  return Object.fromEntries(service.methods.map((m) => [m.localName, guards])) as MethodGuards<S>;
}

/** A refusal is a throw, or a rejected promise from a guard that reads the store. */
type Guard = (ctx: HandlerContext) => void | Promise<void>;
type AnyMethod = (req: unknown, ctx: HandlerContext) => unknown;

/**
 * The implementation with each method's guards run before it. services.ts
 * applies it where a service is bound, so every door gets the guarded object:
 * Connect's adapter, the unary gRPC door and the REST facade all call it
 * (a Connect interceptor would miss the last two, which call it directly).
 */
export function withGuards<S extends DescService>(domain: Domain, service: S, impl: ServiceImpl<S>, guards: MethodGuards<S>): ServiceImpl<S> {
  const code: Record<GuardName, Guard> = { admin: (ctx) => requireAdmin(domain, ctx), noStore };
  const methods = impl as unknown as Record<string, AnyMethod>;
  const declared = guards as unknown as Record<string, readonly GuardName[] | undefined>;
  const guarded: Record<string, AnyMethod> = {};
  for (const { localName, methodKind } of service.methods) {
    const method = methods[localName];
    const names = declared[localName];
    if (!method) throw new Error(`${service.typeName}: ${localName} is not implemented`);
    if (!names) throw new Error(`${service.typeName}: ${localName} declares no guards`);
    if (names.length === 0) {
      guarded[localName] = method;
      continue;
    }
    if (methodKind !== "unary") throw new Error(`${service.typeName}: ${localName}: guards are for unary methods`);
    const run = names.map((name) => code[name]);
    // A refusal is a rejected promise, as from the async method it stands before.
    // Guards that answer at once keep the call synchronous up to the method.
    guarded[localName] = (req, ctx) => {
      try {
        for (let i = 0; i < run.length; i++) {
          const pending = run[i]!(ctx);
          if (pending) return pending.then(() => runFrom(run, i + 1, ctx)).then(() => method.call(impl, req, ctx));
        }
      } catch (err) {
        return Promise.reject(err);
      }
      return method.call(impl, req, ctx);
    };
  }
  return guarded as unknown as ServiceImpl<S>;
}

/** The guards from `start` on, one after another, once one has gone async. */
async function runFrom(run: readonly Guard[], start: number, ctx: HandlerContext): Promise<void> {
  for (let i = start; i < run.length; i++) await run[i]!(ctx);
}
