import { randomUUID } from "node:crypto";
import { UpstreamError, type UpstreamClient } from "../federation/upstream.js";
import { isLoopback } from "../federation/urlRule.js";
import type { AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { errorFields, type Logger } from "../shared/log.js";
import type { ApplicationRecord } from "../shared/model.js";
import type { LogoutDelivery } from "../store/backchannelLogouts.js";
import type { Store } from "../store/index.js";
import { judgeLogoutAnswer, type LogoutAnswer, type LogoutAnswerVerdict } from "./logoutAnswers.js";
import type { LogoutTokens } from "./logoutTokens.js";

const SECOND = 1000;

export interface BackchannelLogoutOptions {
  /** How often the queue is looked at for due deliveries (others' and retries), in ms. */
  pollMs: number;
  /**
   * The pause before each retry, in ms; a delivery is given up after the
   * last. The defaults retry first after 5 s and go on for about 15 minutes.
   * A relying party's Retry-After may lengthen a pause up to the longest.
   */
  retryDelaysMs: readonly number[];
  /** Deadline of each POST (at most 10 s, issue 45 §6). */
  timeoutMs: number;
  /** Deliveries claimed at once by this instance. */
  batch: number;
}

export const BACKCHANNEL_LOGOUT_DEFAULTS: BackchannelLogoutOptions = {
  pollMs: SECOND,
  retryDelaysMs: [5, 10, 20, 40, 80, 160, 300, 300].map((s) => s * SECOND),
  timeoutMs: 10 * SECOND,
  batch: 20,
};

/** The audit trail's words for a delivery. */
const detailsOf = (delivery: LogoutDelivery, attempt: number) => ({ reason: delivery.reason, attempt });

/** An attempt that did not deliver, as judged (logoutAnswers.ts); no answer at all has no status and is retried. */
type Miss = { outcome: "final" | "retry"; status?: number; waitMs?: number };

export interface BackchannelLogoutDeps {
  store: Pick<Store, "backchannelLogouts" | "applications">;
  tokens: LogoutTokens;
  upstream: UpstreamClient;
  clock: Clock;
  audit: AuditTrail;
  logger: Logger;
}

/**
 * Delivers the queued logout tokens (OIDC Back-Channel Logout 1.0 §2.5,
 * §2.7): each row is claimed by one instance for longer than a POST may
 * take (store/backchannelLogouts.ts), signed, and POSTed as
 * `logout_token` to the application's backchannelLogoutUri through the
 * outbound rules (federation/upstream.ts: a deadline, no redirects, only
 * public addresses unless the URI is loopback or the application allows
 * private ones). The answer is judged by logoutAnswers.ts: a final one (a
 * 4xx but 408 and 429) is given up and audited at once; any other failure
 * is retried after the next pause (longer if the relying party's
 * Retry-After asks), and given up and audited after the last. A crash
 * between the POST and its record sends the token again: at least once.
 * Runs off every request's path: it is woken when a session ends here, and
 * polls for the rest.
 */
export class BackchannelLogouts {
  private readonly claimant = randomUUID();
  private readonly options: BackchannelLogoutOptions;
  /** The longest pause of the schedule: the most a Retry-After may ask. */
  private readonly longestPauseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly deps: BackchannelLogoutDeps,
    options: Partial<BackchannelLogoutOptions> = {},
  ) {
    this.options = { ...BACKCHANNEL_LOGOUT_DEFAULTS, ...options };
    this.options.timeoutMs = Math.min(this.options.timeoutMs, BACKCHANNEL_LOGOUT_DEFAULTS.timeoutMs);
    this.longestPauseMs = Math.max(0, ...this.options.retryDelaysMs);
  }

  start(): void {
    this.stopped = false;
    this.schedule();
    this.wake();
  }

  /** Stop polling and wait for deliveries under way, so the store can close after them. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.draining;
  }

  /** Deliver what is due now, off the caller's path. */
  wake(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.wake();
      }
    });
  }

  /** One pass over what is due; resolves when each claimed delivery was tried. */
  async drain(): Promise<void> {
    try {
      for (;;) {
        const now = this.deps.clock.now();
        // The lease outlasts a POST's deadline and the signing around it.
        const lease = now + this.options.timeoutMs * 3;
        const claimed = await this.deps.store.backchannelLogouts.claimDue(now, lease, this.claimant, this.options.batch);
        await Promise.all(claimed.map((delivery) => this.attempt(delivery)));
        if (claimed.length < this.options.batch || this.stopped) return;
      }
    } catch (err) {
      this.deps.logger.error("back-channel logout queue unreadable; trying again at the next poll", errorFields(err));
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.wake();
      this.schedule();
    }, this.options.pollMs);
    this.timer.unref();
  }

  private async attempt(delivery: LogoutDelivery): Promise<void> {
    const { store, audit, clock } = this.deps;
    const attempt = delivery.attempts + 1;
    const app = await store.applications.findByClientId(delivery.clientId);
    let verdict: LogoutAnswerVerdict;
    try {
      if (!app?.backchannelLogoutUri) throw new UpstreamError("backchannel_logout", "is no longer set: the application was changed or deleted");
      verdict = judgeLogoutAnswer(await this.post(app, delivery), clock.now());
    } catch (err) {
      await this.failed(delivery, app, err, attempt, { outcome: "retry" });
      return;
    }
    if (verdict.outcome !== "delivered") {
      await this.failed(delivery, app, new UpstreamError("backchannel_logout", `answered HTTP ${verdict.status}`), attempt, verdict);
      return;
    }
    await store.backchannelLogouts.done(delivery.id, this.claimant);
    audit.record({
      event: "backchannel_logout_delivered",
      outcome: "success",
      actor: { kind: "client", id: app.id, name: app.clientId },
      clientId: app.clientId,
      userId: delivery.userId,
      details: detailsOf(delivery, attempt),
    });
  }

  private async post(app: ApplicationRecord, delivery: LogoutDelivery): Promise<LogoutAnswer> {
    const token = await this.deps.tokens.sign(app, { sub: delivery.userId, sid: delivery.sid });
    const url = new URL(app.backchannelLogoutUri);
    // The rule the URI was saved under, held again at connect time for a name that resolves elsewhere.
    const publicOnly = !app.allowPrivateBackchannelLogoutUri && !isLoopback(url);
    return this.deps.upstream.postForm("backchannel_logout", url.href, { logout_token: token }, publicOnly);
  }

  private async failed(delivery: LogoutDelivery, app: ApplicationRecord | undefined, err: unknown, attempt: number, miss: Miss): Promise<void> {
    const { store, audit, logger, clock } = this.deps;
    // Our own wording only (UpstreamError): never the answer's body.
    const reason = err instanceof UpstreamError ? err.message : "could not be signed or sent";
    const pause = this.options.retryDelaysMs[delivery.attempts];
    if (miss.outcome === "retry" && pause !== undefined && app?.backchannelLogoutUri) {
      // RFC 9110 §10.2.3: a Retry-After later than our pause is waited for, up to the schedule's longest pause.
      const wait = Math.max(pause, Math.min(miss.waitMs ?? 0, this.longestPauseMs));
      await store.backchannelLogouts.retryAt(delivery.id, this.claimant, clock.now() + wait, reason);
      return;
    }
    await store.backchannelLogouts.done(delivery.id, this.claimant);
    // OIDC Back-Channel Logout 1.0 §2.8: a 400 (as any final 4xx) says the relying party refused; it is not asked again.
    const final = miss.outcome === "final" ? { retried: false } : {};
    const status = miss.status === undefined ? {} : { status: miss.status };
    if (!(err instanceof UpstreamError)) logger.error("back-channel logout failed", errorFields(err));
    logger.warn("back-channel logout given up", { clientId: delivery.clientId, attempts: attempt, reason, ...status, ...final });
    audit.record({
      event: "backchannel_logout_failed",
      outcome: "failure",
      actor: { kind: "client", id: app?.id ?? "", name: delivery.clientId },
      clientId: delivery.clientId,
      userId: delivery.userId,
      details: { ...detailsOf(delivery, attempt), error: reason, ...status, ...final },
    });
  }
}
