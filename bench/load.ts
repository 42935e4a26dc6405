import autocannon, { type Result } from "autocannon";
import { log, settings } from "./settings.js";

/** One request shape; a load cycles through several (e.g. different tokens). */
export interface HttpRequest {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Rewrites the request before each send (autocannon's hook), e.g. for a fresh client assertion. */
  setupRequest?: (request: HttpRequest) => HttpRequest;
}

export interface LoadResult {
  /** Successful (2xx) responses per second. */
  rps: number;
  p99Ms: number;
  ok: number;
  /** 2xx responses including the warm-up's (e.g. tokens issued). */
  okWithWarmup: number;
  /** Non-2xx responses, socket errors and timeouts: any of them fails the row. */
  failures: number;
}

/** `seconds` of load after `warmupSeconds` of load that is not measured. */
export type TurnLoad = (seconds: number, warmupSeconds: number) => Promise<LoadResult>;

export const CONNECTIONS = 50;
export const FORM = "application/x-www-form-urlencoded";

export const post = (path: string, params: Record<string, string>, headers: Record<string, string> = {}): HttpRequest => ({
  method: "POST",
  path,
  headers: { "content-type": FORM, ...headers },
  body: new URLSearchParams(params).toString(),
});

const summarize = (result: Result): LoadResult => ({
  rps: result["2xx"] / result.duration,
  p99Ms: result.latency.p99,
  ok: result["2xx"],
  okWithWarmup: result["2xx"],
  failures: result.non2xx + result.errors + result.timeouts,
});

/** HTTP/1.1 load by autocannon: `CONNECTIONS` keep-alive connections, one request in flight on each. */
export const httpLoad =
  (url: string, requests: HttpRequest[]): TurnLoad =>
  async (seconds, warmupSeconds) => {
    const run = (duration: number) => autocannon({ url, connections: CONNECTIONS, pipelining: 1, duration, requests });
    const warmup = warmupSeconds > 0 ? (await run(warmupSeconds))["2xx"] : 0;
    const result = summarize(await run(seconds));
    return { ...result, okWithWarmup: result.ok + warmup };
  };

/** Exactly `amount` requests as fast as they go (e.g. issuing tokens for the memory row). */
export const httpAmount = async (url: string, requests: HttpRequest[], amount: number) =>
  summarize(await autocannon({ url, connections: CONNECTIONS, pipelining: 1, amount, requests }));

/** Runs of one load taken as one: their responses over their time, the worst run's p99. */
export function combined(results: readonly LoadResult[]): LoadResult {
  const sum = (of: (r: LoadResult) => number) => results.reduce((total, r) => total + of(r), 0);
  const seconds = sum((r) => (r.rps > 0 ? r.ok / r.rps : 0));
  const ok = sum((r) => r.ok);
  return { rps: seconds > 0 ? ok / seconds : 0, p99Ms: Math.max(...results.map((r) => r.p99Ms)), ok, okWithWarmup: sum((r) => r.okWithWarmup), failures: sum((r) => r.failures) };
}

/**
 * Loads compared with each other, each run for `settings.seconds` in all but
 * in `settings.turns` short runs taken in turns (a, b, a, b...), the first of
 * each after a warm-up. These machines' speed drifts by up to 2x within
 * minutes: loads measured one after the other saw different machines.
 */
export async function inTurns(loads: readonly TurnLoad[]): Promise<LoadResult[]> {
  const runs = loads.map((): LoadResult[] => []);
  for (let turn = 0; turn < settings.turns; turn++) {
    for (const [i, load] of loads.entries()) runs[i]!.push(await load(settings.seconds / settings.turns, turn === 0 ? settings.warmupSeconds : 0));
  }
  return runs.map(combined);
}

export const rateText = (r: LoadResult) =>
  `${Math.round(r.rps).toLocaleString("en-US")} req/s, p99 ${r.p99Ms.toFixed(1)} ms${r.failures ? `, ${r.failures} FAILED` : ""}`;

/** inTurns, each result logged under its name. */
export async function measured(names: readonly string[], loads: readonly TurnLoad[]): Promise<LoadResult[]> {
  log(`${names.join(", ")}: in ${settings.turns} turns`);
  const results = await inTurns(loads);
  for (const [i, r] of results.entries()) log(`  ${names[i]}: ${rateText(r)}`);
  return results;
}
