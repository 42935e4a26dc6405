import { createContextKey, type HandlerContext } from "@connectrpc/connect";

/**
 * Who is making an admin call: the holder of the admin token, or a user whose
 * access token carries the admin scope. Logs and audit events name it.
 */
export interface AdminActor {
  kind: "admin" | "user";
  /** `admin` for the admin token; the user's id otherwise. */
  id: string;
  /** `admin` for the admin token; the user's name otherwise. */
  name: string;
}

/** The admin token's holder, which has no user behind it. */
export const ADMIN_TOKEN_ACTOR: AdminActor = Object.freeze({ kind: "admin", id: "admin", name: "admin" });

/** Set by the `admin` guard (adminAuth.ts) once the caller is allowed in. */
export const ADMIN_ACTOR = createContextKey<AdminActor | undefined>(undefined, { description: "admin actor" });

/**
 * The actor the `admin` guard let in. Only methods guarded by `admin` have
 * one; calling this elsewhere is a programming error, not a caller's.
 */
export function adminActorOf(ctx: HandlerContext): AdminActor {
  const actor = ctx.values.get(ADMIN_ACTOR);
  if (!actor) throw new Error(`${ctx.method.parent.typeName}.${ctx.method.name}: no admin actor (method not guarded by "admin")`);
  return actor;
}
