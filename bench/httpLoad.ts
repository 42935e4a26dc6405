import autocannon, { type Result } from "autocannon";

/** One request shape; the load cycles through several (e.g. different tokens). */
export interface HttpRequest {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadOptions {
  url: string;
  requests: HttpRequest[];
  seconds: number;
  /** Seconds of load before the measured run, whose figures are dropped. */
  warmupSeconds: number;
  connections?: number;
  /** Requests per second over all connections; unlimited when absent. */
  overallRate?: number;
}

export interface LoadResult {
  /** Successful (2xx) responses per second. */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  /** 2xx responses including the warm-up's (e.g. tokens issued). */
  okWithWarmup: number;
  /** Non-2xx responses, socket errors and timeouts: any of them fails the row. */
  failures: number;
}

export const CONNECTIONS = 50;

/** The `p`th percentile (0-100) of ascending `sorted`, 0 when empty. */
export const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** A run measured by our own clients: each success's latency in ms, the failures, and how long it took. */
export function latencyResult(latencies: number[], failures: number, elapsedSeconds: number): LoadResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  const ok = sorted.length;
  return { rps: ok / elapsedSeconds, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), ok, okWithWarmup: ok, failures };
}

/** Runs of one load taken as one: their responses over their time, the worst run's percentiles. */
export function combined(results: readonly LoadResult[]): LoadResult {
  const sum = (of: (r: LoadResult) => number) => results.reduce((total, r) => total + of(r), 0);
  const ok = sum((r) => r.ok);
  const seconds = sum((r) => (r.rps > 0 ? r.ok / r.rps : 0));
  return {
    rps: seconds > 0 ? ok / seconds : 0,
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    ok,
    okWithWarmup: sum((r) => r.okWithWarmup),
    failures: sum((r) => r.failures),
  };
}

/** HTTP/1.1 load with autocannon: keep-alive connections, one request in flight on each. */
export async function httpLoad(options: LoadOptions): Promise<LoadResult> {
  const run = (seconds: number) =>
    autocannon({
      url: options.url,
      connections: options.connections ?? CONNECTIONS,
      pipelining: 1,
      duration: seconds,
      overallRate: options.overallRate,
      requests: options.requests,
    });
  const warmup = options.warmupSeconds > 0 ? (await run(options.warmupSeconds))["2xx"] : 0;
  const result = summarize(await run(options.seconds));
  return { ...result, okWithWarmup: result.ok + warmup };
}

/** Exactly `amount` requests as fast as they go (e.g. issuing tokens for the memory row). */
export async function httpAmount(url: string, requests: HttpRequest[], amount: number): Promise<LoadResult> {
  return summarize(await autocannon({ url, connections: CONNECTIONS, pipelining: 1, amount, requests }));
}

function summarize(result: Result): LoadResult {
  const ok = result["2xx"];
  return {
    rps: ok / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    ok,
    okWithWarmup: ok,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}
