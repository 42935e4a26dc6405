import cluster, { type Worker } from "node:cluster";
import { availableParallelism } from "node:os";
import { AggregatorRegistry } from "prom-client";
import { APPLICATION_CACHE_MS } from "./../store/applications.js";
import { isPrivateSqlite } from "./../store/db.js";
import type { Logger } from "./../shared/log.js";
import type { RunningServer } from "./server.js";

/**
 * `serve --workers N`: N processes serve the one port through node:cluster
 * (the primary accepts connections and hands them round-robin to the
 * workers). The primary serves nothing itself: it starts the workers, prints
 * the start banner once, relays cache invalidations between them, sums
 * their metrics for a scrape, drains them on a signal and replaces one that
 * dies.
 */

/** How many processes `--workers` asks for: 0 is one per core. */
export function workerCount(workers: number | undefined): number {
  return workers === 0 ? availableParallelism() : (workers ?? 1);
}

/**
 * Refuses `count` workers on a database they cannot share: each worker
 * opening `:memory:` would get one of its own, so a change made through one
 * worker (a user disabled, a token revoked) would not hold on the others.
 */
export function refuseUnsharedDatabase(count: number, database: string): void {
  if (count > 1 && isPrivateSqlite(database)) {
    throw new Error(
      `--workers ${count} cannot run on an in-memory database (${database || '""'}): the workers would each have one of their own, ` +
        "so a change made through one would not hold on the others. Use a SQLite file or PostgreSQL (--database), or --workers 1",
    );
  }
}

/** What the primary prints once, from the workers' ready messages. */
export interface Banner {
  url: string;
  issuer: string;
  metricsUrl?: string;
  demo?: RunningServer["demo"];
  paths: RunningServer["paths"];
}

type Message =
  | { type: "identity:ready"; banner: Banner }
  // worker -> primary: it wrote applications; primary -> worker: forget them.
  | { type: "identity:forget"; id: number; what: Forgettable }
  // worker -> primary: forgotten; primary -> the writer: every sibling has.
  | { type: "identity:forgot"; id: number }
  | { type: "identity:metrics"; id: number }
  | { type: "identity:metrics-answer"; id: number; contentType?: string; body?: string; error?: string }
  | { type: "identity:stop" }
  // primary -> worker: the banner is out; log lines held until then may follow it (on a terminal).
  | { type: "identity:printed" };

/** What a worker drops after a sibling's write: the applications' caches, or the signing keys (re-read at once). */
type Forgettable = "applications" | "keys";

const isMessage = (m: unknown): m is Message =>
  typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string" && (m as { type: string }).type.startsWith("identity:");

/** How long a worker dead soon after its start waits before it is replaced, so a crash loop does not spin. */
const RESTART_DELAY_MS = 1000;

/**
 * The primary: starts `count` workers (the first alone, so the start-up work
 * that happens once — migrations, the first signing key, the config file,
 * the demo seed — is done before the others start and find it done), prints
 * `print(banner)` once they all serve, and runs until a signal has drained
 * them. Resolves with the exit status.
 */
export async function runPrimary(count: number, logger: Logger, print: (banner: Banner, pids: number[]) => void, shutdownTimeoutSeconds: number): Promise<number> {
  const primary = new Primary(logger, shutdownTimeoutSeconds);
  cluster.on("exit", (worker, code, signal) => primary.exited(worker, code, signal));
  process.on("SIGINT", (signal) => primary.signalled(signal));
  process.on("SIGTERM", (signal) => primary.signalled(signal));
  return primary.start(count, print);
}

const liveWorkers = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);

/** The primary's state: its workers' start, their messages, a death, a signal. */
class Primary {
  private stopping = false;
  private serving = false;
  private printed = false;
  private readonly aggregator = new AggregatorRegistry();
  private readonly waiters = new Map<Worker, { resolve: (b: Banner) => void; reject: (e: Error) => void }>();
  private readonly relay: ForgetRelay;
  private done: (status: number) => void = () => {};
  private readonly finished = new Promise<number>((resolve) => (this.done = resolve));

  constructor(
    private readonly logger: Logger,
    private readonly shutdownTimeoutSeconds: number,
  ) {
    this.relay = new ForgetRelay((worker, message) => this.send(worker, message));
  }

  /** Start the workers, the first alone; print the banner once all serve. */
  async start(count: number, print: (banner: Banner, pids: number[]) => void): Promise<number> {
    try {
      const first = this.fork();
      const banners = [await first.ready];
      const rest = Array.from({ length: count - 1 }, () => this.fork());
      banners.push(...(await Promise.all(rest.map((r) => r.ready))));
      this.serving = true;
      const demo = banners.find((b) => b.demo)?.demo;
      print({ ...banners[0]!, demo }, [first.worker, ...rest.map((r) => r.worker)].map((w) => w.process.pid!));
      this.printed = true;
      for (const worker of liveWorkers()) this.send(worker, { type: "identity:printed" });
    } catch (err) {
      if (this.stopping) return this.finished;
      this.logger.error("a worker failed to start", { error: (err as Error).message });
      this.stopping = true;
      if (liveWorkers().length === 0) return 1;
      this.stopAll();
      await Promise.race([this.finished, new Promise((r) => setTimeout(r, (this.shutdownTimeoutSeconds + 5) * 1000).unref())]);
      return 1;
    }
    return this.finished;
  }

  /** A worker died: while serving, another takes its place; while stopping, the last one ends the primary. */
  exited(worker: Worker, code: number, signal: string): void {
    this.waiters.get(worker)?.reject(new Error(`worker ${worker.process.pid} exited (${signal ?? code}) before it served`));
    this.relay.gone(worker);
    if (this.stopping) {
      if (liveWorkers().length === 0) {
        this.logger.info("stopped");
        this.done(0);
      }
      return;
    }
    if (!this.serving) return;
    this.logger.error("worker exited unexpectedly: starting another", { pid: worker.process.pid, code, signal });
    setTimeout(() => {
      if (this.stopping) return;
      const next = this.fork();
      next.ready.then(() => this.logger.info("worker replaced", { pid: next.worker.process.pid }), () => {});
    }, RESTART_DELAY_MS).unref();
  }

  /** SIGINT or SIGTERM: drain the workers; a second signal kills them. */
  signalled(signal: NodeJS.Signals): void {
    if (this.stopping) {
      this.logger.warn("second signal: exiting without waiting", { signal });
      for (const worker of liveWorkers()) worker.process.kill("SIGKILL");
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    this.stopping = true;
    this.logger.info("shutting down", { signal, workers: liveWorkers().length, timeout_seconds: this.shutdownTimeoutSeconds });
    if (liveWorkers().length === 0) this.done(0);
    this.stopAll();
    // Each worker cuts what is still running at the timeout; one that hangs past it is killed.
    setTimeout(() => {
      for (const worker of liveWorkers()) worker.process.kill("SIGKILL");
    }, (this.shutdownTimeoutSeconds + 10) * 1000).unref();
  }

  private fork(): { worker: Worker; ready: Promise<Banner> } {
    const worker = cluster.fork();
    const started = new Promise<Banner>((resolve, reject) => this.waiters.set(worker, { resolve, reject }));
    started.catch(() => {}).finally(() => this.waiters.delete(worker));
    worker.on("message", (message: unknown) => this.received(worker, message));
    return { worker, ready: started };
  }

  private received(worker: Worker, message: unknown): void {
    if (!isMessage(message)) return;
    switch (message.type) {
      case "identity:ready":
        this.waiters.get(worker)?.resolve(message.banner);
        // A worker replaced after the banner has nothing to wait for.
        if (this.printed) this.send(worker, { type: "identity:printed" });
        break;
      case "identity:forget":
        this.relay.forget(worker, message.id, message.what);
        break;
      case "identity:forgot":
        this.relay.forgot(worker, message.id);
        break;
      case "identity:metrics":
        this.aggregator.clusterMetrics().then(
          (body) => this.send(worker, { type: "identity:metrics-answer", id: message.id, contentType: this.aggregator.contentType, body }),
          (err: Error) => this.send(worker, { type: "identity:metrics-answer", id: message.id, error: err.message }),
        );
        break;
    }
  }

  private send(worker: Worker, message: Message): void {
    if (worker.isConnected()) worker.send(message, (err: Error | null) => err && this.logger.warn("message to a worker lost", { pid: worker.process.pid, error: err.message }));
  }

  private stopAll(): void {
    for (const worker of liveWorkers()) this.send(worker, { type: "identity:stop" });
  }
}

/**
 * A worker's write relayed to its siblings: each forgets its cache, and the
 * writer hears once all have (or once the cache bound has passed).
 */
class ForgetRelay {
  private nextId = 0;
  private readonly pending = new Map<number, { writer: Worker; writerId: number; left: Set<Worker>; timer: NodeJS.Timeout }>();

  constructor(private readonly send: (worker: Worker, message: Message) => void) {}

  forget(writer: Worker, writerId: number, what: Forgettable): void {
    const siblings = liveWorkers().filter((w) => w !== writer && w.isConnected());
    const id = ++this.nextId;
    // Past the cache bound a sibling's cache has expired anyway.
    const timer = setTimeout(() => this.settle(id), APPLICATION_CACHE_MS);
    this.pending.set(id, { writer, writerId, left: new Set(siblings), timer });
    if (siblings.length === 0) this.settle(id);
    for (const sibling of siblings) this.send(sibling, { type: "identity:forget", id, what });
  }

  forgot(sibling: Worker, id: number): void {
    const entry = this.pending.get(id);
    entry?.left.delete(sibling);
    if (entry && entry.left.size === 0) this.settle(id);
  }

  /** A dead worker forgets nothing more: nobody waits for it. */
  gone(worker: Worker): void {
    for (const [id, entry] of this.pending) {
      if (entry.left.delete(worker) && entry.left.size === 0) this.settle(id);
    }
  }

  private settle(id: number): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    clearTimeout(entry.timer);
    this.send(entry.writer, { type: "identity:forgot", id: entry.writerId });
  }
}

/**
 * A worker, once its server runs: tells the primary it serves, keeps its
 * application cache in step with its siblings', answers scrapes with the
 * sum over every worker, drains on the primary's word (`drain`), and calls
 * `printed` once the primary's banner is out.
 */
export function joinCluster(server: RunningServer, drain: () => void, printed: () => void = () => {}): void {
  const send = (message: Message) => {
    if (process.connected) process.send!(message);
  };
  let nextId = 0;
  const pending = new Map<number, (message: Message) => void>();
  const ask = (message: (id: number) => Message, timeoutMs: number): Promise<Message | undefined> =>
    new Promise((resolve) => {
      const id = ++nextId;
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve(undefined);
      }, timeoutMs);
      pending.set(id, (answer) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(answer);
      });
      send(message(id));
    });

  // Settles once every sibling has forgotten (or the cache bound has passed).
  const tellSiblings = (what: Forgettable) => async () => {
    await ask((id) => ({ type: "identity:forget", id, what }), APPLICATION_CACHE_MS + 100);
  };
  const applications = server.store.applications;
  // The write answers once the siblings have forgotten.
  applications.onWrite = tellSiblings("applications");
  // A rotation is published by every worker at once, not after --key-reload-seconds.
  const keys = server.domain.keys;
  keys.onRotate = tellSiblings("keys");

  if (server.metrics) {
    // prom-client answers the primary's requests once one AggregatorRegistry exists here.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([server.metrics.scrapeRegistry]);
    server.metrics.renderBy(async () => {
      const answer = await ask((id) => ({ type: "identity:metrics", id }), 10_000);
      if (answer?.type !== "identity:metrics-answer" || answer.body === undefined) {
        throw new Error(`metrics of the workers not summed: ${answer?.type === "identity:metrics-answer" ? answer.error : "no answer from the primary"}`);
      }
      return { contentType: answer.contentType ?? "text/plain; version=0.0.4; charset=utf-8", body: answer.body };
    });
  }

  process.on("message", (message: unknown) => {
    if (!isMessage(message)) return;
    switch (message.type) {
      case "identity:forget":
        if (message.what === "keys") keys.forget();
        else applications.forget();
        send({ type: "identity:forgot", id: message.id });
        break;
      case "identity:forgot":
      case "identity:metrics-answer":
        pending.get(message.id)?.(message);
        break;
      case "identity:stop":
        drain();
        break;
      case "identity:printed":
        printed();
        break;
    }
  });
  // The primary is gone: nobody hands us connections any more.
  process.once("disconnect", drain);
  send({
    type: "identity:ready",
    banner: { url: server.url, issuer: server.issuer, metricsUrl: server.metricsUrl, demo: server.demo, paths: server.paths },
  });
}

export const isClusterWorker = (): boolean => cluster.isWorker;
export const isClusterPrimary = (): boolean => cluster.isPrimary;
