import { execFile, execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { latencyResult, type LoadResult } from "./httpLoad.js";

const run = promisify(execFile);

/**
 * Whether nghttp2's h2load is on this machine (Debian: nghttp2-client). It
 * is the HTTP/2 counterpart of autocannon: a native client that keeps many
 * streams in flight on one connection for a few µs of CPU each. Node's own
 * HTTP/2 client spends 200-300 µs per call, more than our server does, and
 * on two cores the client's CPU is taken from the server.
 */
export function h2loadInstalled(): boolean {
  try {
    execFileSync("h2load", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export interface H2loadOptions {
  url: string;
  /** One request body for every call: h2load cannot vary it. */
  body: Uint8Array;
  headers: Record<string, string>;
  seconds: number;
  warmupSeconds: number;
  /** Streams in flight on the one connection. */
  concurrency: number;
  /** A folder for the body and the per-request log. */
  dir: string;
}

/**
 * POSTs over one h2c connection with `concurrency` streams in flight. Each
 * response's HTTP status and latency come from h2load's per-request log;
 * anything but 200, and every call h2load counts as failed, errored or timed
 * out, is a failure. h2load does not read gRPC trailers: the caller checks
 * the gRPC statuses some other way (the gRPC row reads our server's metrics).
 */
export async function h2loadRun(options: H2loadOptions): Promise<LoadResult> {
  const bodyFile = join(options.dir, "h2load-body");
  const logFile = join(options.dir, "h2load-requests.tsv");
  writeFileSync(bodyFile, options.body);
  rmSync(logFile, { force: true }); // h2load appends to it
  const args = (seconds: number) => [
    "-D", `${Math.round(seconds * 1000)}ms`,
    "-c", "1",
    "-m", String(options.concurrency),
    "-d", bodyFile,
    ...Object.entries(options.headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]),
    options.url,
  ];
  const warmup = options.warmupSeconds > 0 ? summary((await run("h2load", args(options.warmupSeconds))).stdout).succeeded : 0;
  const { stdout } = await run("h2load", ["--log-file", logFile, ...args(options.seconds)]);
  const totals = summary(stdout);
  const latencies: number[] = [];
  let failures = totals.unfinished;
  for (const line of readFileSync(logFile, "utf8").split("\n")) {
    const [, status, micros] = line.split("\t");
    if (status === undefined) continue;
    if (status === "200") latencies.push(Number(micros) / 1000);
    else failures++;
  }
  const result = latencyResult(latencies, failures, totals.seconds);
  return { ...result, okWithWarmup: result.ok + warmup };
}

/** What h2load prints at the end: how long it ran, and the calls that did not finish well. */
function summary(stdout: string): { seconds: number; succeeded: number; unfinished: number } {
  const finished = /finished in ([\d.]+)(m?s),/.exec(stdout);
  const requests = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(stdout);
  if (!finished || !requests) throw new Error(`h2load: unexpected output\n${stdout}`);
  const [succeeded, failed, errored, timedOut] = requests.slice(1).map(Number) as [number, number, number, number];
  const seconds = Number(finished[1]) / (finished[2] === "ms" ? 1000 : 1);
  return { seconds, succeeded, unfinished: failed + errored + timedOut };
}
