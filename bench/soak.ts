/**
 * The soak: a mixed load (issue, introspect, userinfo, refresh, revoke) held
 * on loopback for 10 minutes against a server in its own process, on a
 * SQLite file. Not part of `npm test`.
 *
 *   npm run soak -- [--duration 600] [--connections 8] [--heap-growth-mb 16]
 *
 * It passes when no answer was wrong, the server's heap (after a full
 * collection) grew by at most --heap-growth-mb between the end of the first
 * minute and the end, and every minute's p99 latency stayed within twice the
 * first minute's. It prints a table per minute and a summary.
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { MIX, SoakWorker, type Operation } from "./soakLoad.js";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "600" },
    connections: { type: "string", default: "8" },
    "heap-growth-mb": { type: "string", default: "16" },
  },
});
const durationMs = Number(values.duration) * 1000;
const connections = Number(values.connections);
const heapGrowthBound = Number(values["heap-growth-mb"]) * 1024 * 1024;
const MINUTE = 60_000;

const dir = mkdtempSync(join(tmpdir(), "identity-soak-"));
const child = fork(new URL("./soakServer.ts", import.meta.url).pathname, [join(dir, "soak.sqlite")], {
  execArgv: ["--expose-gc", "--import", "tsx"],
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});
const replies: Array<(message: any) => void> = [];
child.on("message", (message) => replies.shift()?.(message));
const ask = (message?: string) =>
  new Promise<any>((resolve) => {
    replies.push(resolve);
    if (message) child.send(message);
  });
const { url } = await ask();
const heap = async () => (await ask("heap")) as { heapUsed: number; rss: number };

interface Minute {
  /** Each request's latency in µs. */
  latencies: RecordableHistogram;
  errors: number;
  byOperation: Record<Operation, number>;
}
const minutes: Minute[] = [];
const minuteAt = (elapsed: number) =>
  (minutes[Math.floor(elapsed / MINUTE)] ??= { latencies: createHistogram(), errors: 0, byOperation: { issue: 0, introspect: 0, userinfo: 0, refresh: 0, revoke: 0 } });
const errorSamples: string[] = [];

console.log(`soak: ${url}, ${connections} connections, ${durationMs / 1000} s, mix ${JSON.stringify(MIX)}`);
const heapAtStart = await heap();
const started = performance.now();
let heapAfterFirstMinute: { heapUsed: number; rss: number } | undefined;
const firstMinuteHeap = new Promise<void>((resolve) =>
  setTimeout(async () => {
    heapAfterFirstMinute = await heap();
    resolve();
  }, Math.min(MINUTE, durationMs)),
);

// Each worker runs until the deadline: a bounded loop, one request at a time.
await Promise.all(
  Array.from({ length: connections }, async () => {
    const worker = new SoakWorker(url);
    while (performance.now() - started < durationMs) {
      const op = worker.next(Math.random());
      const t0 = performance.now();
      let error: string | undefined;
      try {
        error = await worker.run(op, Math.random());
      } catch (err) {
        error = `${op}: ${(err as Error).message}`;
      }
      const minute = minuteAt(t0 - started);
      minute.latencies.record(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      minute.byOperation[op]++;
      if (error) {
        minute.errors++;
        if (errorSamples.length < 10) errorSamples.push(error);
      }
    }
  }),
);
await firstMinuteHeap;
const heapAtEnd = await heap();
child.disconnect();
await new Promise((resolve) => child.once("exit", resolve));
rmSync(dir, { recursive: true, force: true });

const cell = (v: number) => v.toFixed(1).padStart(8);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
console.log("\nminute  requests    req/s  errors     p50 ms     p99 ms  p99/first  issue introspect userinfo refresh revoke");
const ms = (histogram: RecordableHistogram | undefined, p: number) => (histogram?.count ? histogram.percentile(p) / 1000 : 0);
const firstP99 = ms(minutes[0]?.latencies, 99);
let worstRatio = 0;
let requests = 0;
let errors = 0;
for (const [i, m] of minutes.entries()) {
  const count = m.latencies.count;
  const p99 = ms(m.latencies, 99);
  // A last minute cut short by the deadline holds too few requests to judge.
  const full = (i + 1) * MINUTE <= durationMs;
  const ratio = p99 / firstP99;
  if (full) worstRatio = Math.max(worstRatio, ratio);
  requests += count;
  errors += m.errors;
  const ops = m.byOperation;
  console.log(
    `${String(i + 1).padStart(6)} ${String(count).padStart(9)} ${String(Math.round(count / 60)).padStart(8)} ${String(m.errors).padStart(7)} ${cell(ms(m.latencies, 50))}   ${cell(p99)} ${ratio.toFixed(2).padStart(10)}${full ? "" : "*"} ${[ops.issue, ops.introspect, ops.userinfo, ops.refresh, ops.revoke].map((n, j) => String(n).padStart([6, 11, 9, 8, 7][j]!)).join("")}`,
  );
}
const growth = heapAtEnd.heapUsed - (heapAfterFirstMinute ?? heapAtStart).heapUsed;
const checks = [
  { name: "error rate 0", ok: errors === 0, detail: `${errors} of ${requests}` },
  { name: `heap growth after the first minute <= ${mb(heapGrowthBound)}`, ok: growth <= heapGrowthBound, detail: `${mb((heapAfterFirstMinute ?? heapAtStart).heapUsed)} -> ${mb(heapAtEnd.heapUsed)} (${growth >= 0 ? "+" : ""}${mb(growth)}); at start ${mb(heapAtStart.heapUsed)}, RSS at end ${mb(heapAtEnd.rss)}` },
  { name: "p99 of every minute <= 2x the first minute's", ok: worstRatio <= 2, detail: `worst ${worstRatio.toFixed(2)}x of ${firstP99.toFixed(1)} ms` },
];
console.log(`\n${requests} requests in ${(durationMs / 1000).toFixed(0)} s (${Math.round(requests / (durationMs / 1000))}/s)`);
for (const c of checks) console.log(`${c.ok ? "PASS" : "FAIL"}  ${c.name}: ${c.detail}`);
for (const e of errorSamples) console.log(`  error: ${e}`);
process.exit(checks.every((c) => c.ok) ? 0 : 1);
