import { errorFields, type Logger } from "../log.js";

/**
 * Periodic work of a running server (key refresh and retirement, clean-ups).
 * A run never overlaps the previous run of the same job; a failed run is
 * logged and retried at the next tick. stop() waits for runs in progress.
 */
export class BackgroundJobs {
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly logger: Logger) {}

  every(name: string, intervalMs: number, task: () => Promise<void>): void {
    let run: Promise<void> | undefined;
    const timer = setInterval(() => {
      if (run) return;
      run = task()
        .catch((err) => this.logger.warn("background job failed", { job: name, ...errorFields(err) }))
        .finally(() => {
          this.running.delete(run!);
          run = undefined;
        });
      this.running.add(run);
    }, intervalMs);
    timer.unref(); // never the reason the process stays up
    this.timers.push(timer);
  }

  async stop(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await Promise.all(this.running);
  }
}
