import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * `node bench/cluster.ts <workers> <log file> <serve args...>`: several
 * instances of the built server on one port; node:cluster hands each new
 * connection to the next worker. They share the SQLite file (WAL, busy
 * timeout) as separate instances share a database. Workers start one at a
 * time, so the first alone creates the schema, the signing key and the
 * config entries. The workers write to our stdout, which is `log file`;
 * a worker is ready when its ready line is there.
 */
const [count, logFile, ...serveArgs] = process.argv.slice(2);
const workers = Number(count);
if (!Number.isInteger(workers) || workers < 1 || !logFile) throw new Error("usage: cluster.ts <workers> <log file> <serve args...>");

const READY = /identity-service listening on (http:\/\/\S+)/g;
cluster.setupPrimary({ exec: "dist/src/main.js", args: ["serve", ...serveArgs], execArgv: [] });

let stopping = false;
cluster.on("exit", () => {
  if (!stopping) process.exitCode = 1;
  if (Object.keys(cluster.workers ?? {}).length === 0) process.exit();
});
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGTERM");
  });
}

const pids: number[] = [];
let url = "";
for (let i = 0; i < workers; i++) {
  const worker = cluster.fork();
  pids.push(worker.process.pid!);
  for (;;) {
    if (worker.isDead()) throw new Error(`worker ${i + 1} exited before it was ready`);
    const ready = [...readFileSync(logFile, "utf8").matchAll(READY)];
    if (ready.length > i) {
      url = ready[0]![1]!;
      break;
    }
    await sleep(50);
  }
}
process.stdout.write(`cluster of ${workers} listening on ${url} pids ${pids.join(",")}\n`);
