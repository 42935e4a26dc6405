import type { Clock } from "../shared/clock.js";
import type { AuthorizationRequestRepository, SignInStep } from "../store/authorizationRequests.js";
import type { AuthorizeRequest } from "./authorizeRequest.js";
import { constantTimeEqual, randomToken, sha256 } from "./secrets.js";

/** A validated authorize request waiting for the user to sign in. */
export interface PendingAuthorization {
  /** Public handle, carried by the login form and provider buttons. */
  id: string;
  request: AuthorizeRequest;
  expiresAt: number;
  /** The sign-in steps passed so far, while a second factor is still to come (oauth/factors/). */
  step?: SignInStep;
}

/**
 * Authorize requests kept server-side while the user signs in, so nothing
 * the browser posts back can change the client, redirect_uri or scope. Each
 * is bound to the CSRF token of the browser that started it and completes
 * at most once.
 */
export class PendingAuthorizations {
  constructor(
    private readonly repo: AuthorizationRequestRepository,
    private readonly clock: Clock,
    readonly ttlSeconds = 900,
  ) {}

  async create(request: AuthorizeRequest, csrfToken: string): Promise<PendingAuthorization> {
    const now = this.clock.now();
    const pending = { id: randomToken(), request, expiresAt: now + this.ttlSeconds * 1000 };
    await this.repo.insert({
      id: pending.id,
      csrfHash: sha256(csrfToken),
      request: JSON.stringify(request),
      createdAt: now,
      expiresAt: pending.expiresAt,
    });
    return pending;
  }

  /** The live pending request with this id, if it belongs to the browser holding `csrfToken`. */
  async findForBrowser(id: string | undefined, csrfToken: string | undefined): Promise<PendingAuthorization | undefined> {
    if (!id || !csrfToken || id.length > 100) return undefined;
    const record = await this.repo.findById(id);
    if (!record || record.expiresAt <= this.clock.now()) return undefined;
    if (!constantTimeEqual(record.csrfHash, sha256(csrfToken))) return undefined;
    const step = record.userId && record.amr !== undefined ? { userId: record.userId, amr: record.amr, ...(record.factorId ? { factorId: record.factorId } : {}) } : undefined;
    return { id: record.id, request: JSON.parse(record.request), expiresAt: record.expiresAt, ...(step ? { step } : {}) };
  }

  /** Record a sign-in step (a first factor, then a second) on the request; false if it is gone or names another user. */
  async recordStep(pending: PendingAuthorization, step: SignInStep): Promise<boolean> {
    if (!(await this.repo.recordStep(pending.id, step))) return false;
    pending.step = step;
    return true;
  }

  /** Remove it for good; true for exactly one caller. */
  take(pending: PendingAuthorization): Promise<boolean> {
    return this.repo.take(pending.id);
  }
}
