import http from "node:http";
import { latencyResult, type HttpRequest, type LoadResult } from "./httpLoad.js";

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
 * Latency at a steady offered load. autocannon's rate limit lets each
 * connection send its whole per-second quota back to back at the start of
 * every second and then wait, so "50% of peak" through it is full load for
 * half of each second. Here requests leave evenly spaced (checked every
 * millisecond) over up to `connections` keep-alive connections, and each
 * latency counts from when the request was due, so time spent waiting for
 * a free connection is not hidden.
 */
export async function pacedLoad(options: PacedLoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const target = new URL(options.url);
  const send = (request: HttpRequest) =>
    new Promise<boolean>((resolve) => {
      const req = http.request(
        { agent, host: target.hostname, port: target.port, method: request.method, path: request.path, headers: request.headers },
        (res) => {
          res.resume();
          res.once("end", () => resolve(res.statusCode !== undefined && res.statusCode < 300));
        },
      );
      req.once("error", () => resolve(false));
      req.end(request.body);
    });

  const run = (seconds: number) =>
    new Promise<LoadResult>((resolve) => {
      const latencies: number[] = [];
      const inFlight: Promise<void>[] = [];
      let failures = 0;
      let sent = 0;
      const started = performance.now();
      const total = Math.round(options.rate * seconds);
      const tick = setInterval(() => {
        const due = Math.min(total, Math.floor(((performance.now() - started) * options.rate) / 1000));
        for (; sent < due; sent++) {
          const dueAt = started + (sent * 1000) / options.rate;
          const request = options.requests[sent % options.requests.length]!;
          inFlight.push(
            send(request).then((ok) => {
              if (ok) latencies.push(performance.now() - dueAt);
              else failures++;
            }),
          );
        }
        if (sent < total) return;
        clearInterval(tick);
        void Promise.all(inFlight).then(() => resolve(latencyResult(latencies, failures, (performance.now() - started) / 1000)));
      }, 1);
    });

  try {
    if (options.warmupSeconds > 0) await run(options.warmupSeconds);
    return await run(options.seconds);
  } finally {
    agent.destroy();
  }
}
