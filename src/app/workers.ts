import cluster, { type Worker } from "node:cluster";
import { availableParallelism } from "node:os";
import { AggregatorRegistry } from "prom-client";
import { APPLICATION_CACHE_MS } from "./../store/applications.js";
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
  const aggregator = new AggregatorRegistry();
  let stopping = false;
  let serving = false;
  let printed = false;
  const ready = new Map<Worker, Banner>();
  const waiters = new Map<Worker, { resolve: (b: Banner) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  const forgetting = new Map<number, { writer: Worker; writerId: number; left: Set<Worker>; timer: NodeJS.Timeout }>();
  let done: (status: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (done = resolve));

  const send = (worker: Worker, message: Message) => {
    if (worker.isConnected()) worker.send(message, (err: Error | null) => err && logger.warn("message to a worker lost", { pid: worker.process.pid, error: err.message }));
  };
  const settleForget = (id: number) => {
    const entry = forgetting.get(id);
    if (!entry) return;
    forgetting.delete(id);
    clearTimeout(entry.timer);
    send(entry.writer, { type: "identity:forgot", id: entry.writerId });
  };

  const onMessage = (worker: Worker, message: unknown) => {
    if (!isMessage(message)) return;
    switch (message.type) {
      case "identity:ready":
        ready.set(worker, message.banner);
        waiters.get(worker)?.resolve(message.banner);
        // A worker replaced after the banner has nothing to wait for.
        if (printed) send(worker, { type: "identity:printed" });
        break;
      case "identity:forget": {
        const siblings = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w && w !== worker && w.isConnected());
        const id = ++nextId;
        // Past the cache bound a sibling's cache has expired anyway.
        const timer = setTimeout(() => settleForget(id), APPLICATION_CACHE_MS);
        forgetting.set(id, { writer: worker, writerId: message.id, left: new Set(siblings), timer });
        if (siblings.length === 0) settleForget(id);
        for (const sibling of siblings) send(sibling, { type: "identity:forget", id, what: message.what });
        break;
      }
      case "identity:forgot": {
        const entry = forgetting.get(message.id);
        entry?.left.delete(worker);
        if (entry && entry.left.size === 0) settleForget(message.id);
        break;
      }
      case "identity:metrics":
        aggregator.clusterMetrics().then(
          (body) => send(worker, { type: "identity:metrics-answer", id: message.id, contentType: aggregator.contentType, body }),
          (err: Error) => send(worker, { type: "identity:metrics-answer", id: message.id, error: err.message }),
        );
        break;
    }
  };

  const fork = (): { worker: Worker; ready: Promise<Banner> } => {
    const worker = cluster.fork();
    const started = new Promise<Banner>((resolve, reject) => waiters.set(worker, { resolve, reject }));
    started.catch(() => {}).finally(() => waiters.delete(worker));
    worker.on("message", (message: unknown) => onMessage(worker, message));
    return { worker, ready: started };
  };

  cluster.on("exit", (worker, code, signal) => {
    ready.delete(worker);
    waiters.get(worker)?.reject(new Error(`worker ${worker.process.pid} exited (${signal ?? code}) before it served`));
    for (const [id, entry] of forgetting) {
      if (entry.left.delete(worker) && entry.left.size === 0) settleForget(id);
    }
    const left = Object.keys(cluster.workers ?? {}).length;
    if (stopping) {
      if (left === 0) {
        logger.info("stopped");
        done(0);
      }
      return;
    }
    if (!serving) return;
    logger.error("worker exited unexpectedly: starting another", { pid: worker.process.pid, code, signal });
    setTimeout(() => {
      if (stopping) return;
      const next = fork();
      next.ready.then(() => logger.info("worker replaced", { pid: next.worker.process.pid }), () => {});
    }, RESTART_DELAY_MS).unref();
  });

  const stopAll = () => {
    for (const worker of Object.values(cluster.workers ?? {})) if (worker) send(worker, { type: "identity:stop" });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn("second signal: exiting without waiting", { signal });
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGKILL");
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    stopping = true;
    logger.info("shutting down", { signal, workers: Object.keys(cluster.workers ?? {}).length, timeout_seconds: shutdownTimeoutSeconds });
    if (Object.keys(cluster.workers ?? {}).length === 0) done(0);
    stopAll();
    // Each worker cuts what is still running at the timeout; one that hangs past it is killed.
    setTimeout(() => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGKILL");
    }, (shutdownTimeoutSeconds + 10) * 1000).unref();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    const first = fork();
    const banners = [await first.ready];
    const rest = Array.from({ length: count - 1 }, () => fork());
    banners.push(...(await Promise.all(rest.map((r) => r.ready))));
    serving = true;
    const demo = banners.find((b) => b.demo)?.demo;
    print({ ...banners[0]!, demo }, [first.worker, ...rest.map((r) => r.worker)].map((w) => w.process.pid!));
    printed = true;
    for (const worker of Object.values(cluster.workers ?? {})) if (worker) send(worker, { type: "identity:printed" });
  } catch (err) {
    if (stopping) return finished;
    logger.error("a worker failed to start", { error: (err as Error).message });
    stopping = true;
    if (Object.keys(cluster.workers ?? {}).length === 0) return 1;
    stopAll();
    await Promise.race([finished, new Promise((r) => setTimeout(r, (shutdownTimeoutSeconds + 5) * 1000).unref())]);
    return 1;
  }
  return finished;
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
  const applications = server.domain.store.applications;
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
