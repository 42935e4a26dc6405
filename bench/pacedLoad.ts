import http from "node:http";
import { latencyResult, type HttpRequest, type LoadResult } from "./httpLoad.js";
import { runNode } from "./processes.js";

export interface PacedLoadOptions {
  url: string;
  requests: HttpRequest[];
  /** Requests per second, sent evenly spaced. */
  rate: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
}

/**
 * Latency at a steady offered load, measured by a client in a Node process
 * of its own (bench/pacedClient.ts). In the bench's own process the
 * client's garbage collections counted as the server's latency: after the
 * autocannon runs of the rows before, that heap paused for up to 19-29 ms
 * during the latency row.
 */
export async function pacedLoadInOwnProcess(options: PacedLoadOptions): Promise<PacedRun> {
  return JSON.parse(await runNode(["--import", "tsx", "bench/pacedClient.ts"], JSON.stringify(options))) as PacedRun;
}

/** What one paced run saw, kept whole so that runs can be pooled. */
export interface PacedRun {
  /** Each success's latency, rounded to the microsecond. */
  latenciesMs: number[];
  failures: number;
  seconds: number;
}

/** Paced runs taken as one: their percentiles over all their latencies, their responses over their time. */
export const pooled = (runs: readonly PacedRun[]): LoadResult =>
  latencyResult(
    runs.flatMap((run) => run.latenciesMs),
    runs.reduce((sum, run) => sum + run.failures, 0),
    runs.reduce((sum, run) => sum + run.seconds, 0),
  );

/**
 * autocannon's rate limit lets each connection send its whole per-second
 * quota back to back at the start of every second and then wait, so "50% of
 * peak" through it is full load for half of each second. Here requests
 * leave evenly spaced (checked every millisecond) over up to `connections`
 * keep-alive connections, and each latency counts from when the request was
 * due, so time spent waiting for a free connection is not hidden. Nothing
 * is kept per request but its latency: holding every request's promise to
 * the end promoted them all and brought the client's own full collections.
 */
export async function pacedLoad(options: PacedLoadOptions): Promise<PacedRun> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const target = new URL(options.url);

  const run = (seconds: number) =>
    new Promise<PacedRun>((resolve) => {
      const latencies: number[] = [];
      let failures = 0;
      let sent = 0;
      let answered = 0;
      const started = performance.now();
      const total = Math.round(options.rate * seconds);
      const settle = (dueAt: number, ok: boolean) => {
        if (ok) latencies.push(Math.round((performance.now() - dueAt) * 1000) / 1000);
        else failures++;
        if (++answered === total) resolve({ latenciesMs: latencies, failures, seconds: (performance.now() - started) / 1000 });
      };
      const send = (request: HttpRequest, dueAt: number) => {
        let done = false;
        const once = (ok: boolean) => {
          if (!done) settle(dueAt, ok);
          done = true;
        };
        const req = http.request(
          { agent, host: target.hostname, port: target.port, method: request.method, path: request.path, headers: request.headers },
          (res) => {
            res.resume();
            res.once("end", () => once(res.statusCode !== undefined && res.statusCode < 300));
          },
        );
        req.once("error", () => once(false));
        req.end(request.body);
      };
      const tick = setInterval(() => {
        const due = Math.min(total, Math.floor(((performance.now() - started) * options.rate) / 1000));
        for (; sent < due; sent++) send(options.requests[sent % options.requests.length]!, started + (sent * 1000) / options.rate);
        if (sent === total) clearInterval(tick);
      }, 1);
    });

  try {
    if (options.warmupSeconds > 0) await run(options.warmupSeconds);
    return await run(options.seconds);
  } finally {
    agent.destroy();
  }
}
