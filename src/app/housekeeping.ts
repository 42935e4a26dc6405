import type { Clock } from "./../shared/clock.js";
import { errorFields, type Logger } from "./../shared/log.js";
import { auditEventSweep } from "./../store/auditEvents.js";
import { deleteExpired, SWEEPS, type CleanupLimits, type Sweep } from "./../store/cleanup.js";
import type { Db } from "./../store/db.js";

export interface CleanupJobOptions extends CleanupLimits {
  /** Time between the end of one run and the start of the next, in ms. */
  intervalMs: number;
  /** How long audit events are kept, in ms; 0 (or absent) keeps them for ever. */
  auditRetentionMs?: number;
}

export const DEFAULT_AUDIT_RETENTION_DAYS = 90;
const DAY_MS = 24 * 3600 * 1000;

export const CLEANUP_DEFAULTS: CleanupJobOptions = {
  intervalMs: 60_000,
  batchSize: 1000,
  maxBatches: 10,
  auditRetentionMs: DEFAULT_AUDIT_RETENTION_DAYS * DAY_MS,
};

/**
 * The background job that deletes expired codes, tokens and sessions, and
 * audit events past their retention, so the tables stay bounded. Every instance runs it; the batches they take never
 * overlap (see deleteExpired). Runs never overlap inside one instance either:
 * the next is scheduled when the previous one ends.
 */
export class CleanupJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = true;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: CleanupJobOptions,
  ) {
    this.sweeps = options.auditRetentionMs ? [...SWEEPS, auditEventSweep(options.auditRetentionMs)] : SWEEPS;
  }

  private readonly sweeps: readonly Sweep[];

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** One run now; returns how many rows went per table. */
  async runOnce(): Promise<Record<string, number>> {
    const run = deleteExpired(this.db, this.clock.now(), this.options, this.sweeps);
    this.running = run.catch(() => {});
    return run;
  }

  /** Stop scheduling and wait for a run in progress, so the database can close after it. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.runOnce()
        .then((deleted) => {
          if (Object.values(deleted).some((n) => n > 0)) this.logger.info("cleanup deleted expired rows", deleted);
        })
        .catch((err) => this.logger.error("cleanup failed; retrying next interval", errorFields(err)))
        .finally(() => this.schedule());
    }, this.options.intervalMs);
    // Never the reason the process stays alive.
    this.timer.unref();
  }
}
