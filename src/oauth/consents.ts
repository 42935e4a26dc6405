import type { Clock } from "../shared/clock.js";
import type { ConsentRepository } from "../store/consents.js";
import type { AuthorizeRequest } from "./authorizeRequest.js";

/**
 * Remembered consent (issue 43 §2): Allow is kept per user and application
 * with the scopes and resources granted. A later request for the same or
 * fewer is answered without the page; anything more asks again, and so does
 * `prompt=consent` (OIDC Core §3.1.2.1).
 */
export class Consents {
  constructor(
    private readonly repo: ConsentRepository,
    private readonly clock: Clock,
  ) {}

  /** Whether the user already allowed everything `request` asks of this application. */
  async cover(userId: string, clientId: string, request: AuthorizeRequest): Promise<boolean> {
    if (request.prompt.includes("consent")) return false;
    const given = await this.repo.find(userId, clientId);
    if (!given) return false;
    return request.scopes.every((s) => given.scopes.includes(s)) && (request.resources ?? []).every((r) => given.resources.includes(r));
  }

  /** The user allowed `request`: remembered with what was allowed before. */
  async allow(userId: string, clientId: string, request: AuthorizeRequest): Promise<void> {
    const given = await this.repo.find(userId, clientId);
    const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];
    await this.repo.remember({
      userId,
      clientId,
      scopes: union(given?.scopes ?? [], request.scopes),
      resources: union(given?.resources ?? [], request.resources ?? []),
      grantedAt: this.clock.now(),
    });
  }
}
