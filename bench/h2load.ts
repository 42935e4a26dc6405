import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { IntrospectionService, IntrospectRequestSchema } from "../gen/identity/v1/introspection_pb.js";
import type { LoadResult } from "./load.js";

const run = promisify(execFile);

export const GRPC_INTROSPECT_PATH = `/${IntrospectionService.typeName}/${IntrospectionService.method.introspect.name}`;

/** A gRPC message on the wire: flag byte (0, uncompressed), 4-byte big-endian length, the message. */
export function frame(message: Uint8Array): Buffer {
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

/** An IntrospectRequest for `token`, framed as a gRPC call's body. */
export const introspectionCall = (token: string) => frame(toBinary(IntrospectRequestSchema, create(IntrospectRequestSchema, { token })));

export interface H2loadOptions {
  url: string;
  /** One body for every request: h2load cannot vary it. */
  body: Uint8Array | string;
  headers: Record<string, string>;
  /** A folder for the body file and the per-request log. */
  dir: string;
  /** HTTP/1.1 on `clients` connections (one request in flight on each); else h2c, `clients` streams on one connection. */
  h1?: boolean;
  clients: number;
  /** Requests per second over all clients, each client's evenly spaced (--rps); as fast as they go when absent. */
  rate?: number;
}

/** A load's result with every successful request's latency (µs), so that turns can be pooled. */
export interface H2loadResult extends LoadResult {
  latencies: RecordableHistogram;
}

/**
 * nghttp2's h2load: a native client that costs a few µs of CPU per request,
 * for HTTP/2 (gRPC) and for the paced HTTP/1.1 latency row. Each response's
 * status and latency come from its per-request log: anything but 200, and
 * every request it counts as failed, errored or timed out, is a failure. It
 * does not read gRPC trailers: the gRPC row checks those through our metrics.
 */
export const h2load =
  (options: H2loadOptions) =>
  async (seconds: number, warmupSeconds: number): Promise<H2loadResult> => {
    const bodyFile = join(options.dir, "h2load-body");
    const logFile = join(options.dir, "h2load-requests.tsv");
    writeFileSync(bodyFile, options.body);
    rmSync(logFile, { force: true }); // h2load appends to it
    const ms = (s: number) => `${Math.round(s * 1000)}ms`;
    const args = [
      "-D", ms(seconds),
      ...(warmupSeconds > 0 ? ["--warm-up-time", ms(warmupSeconds)] : []),
      ...(options.h1 ? ["--h1", "-c", String(options.clients)] : ["-c", "1", "-m", String(options.clients)]),
      ...(options.rate ? ["--rps", String(options.rate / (options.h1 ? options.clients : 1))] : []),
      "-d", bodyFile,
      "--log-file", logFile,
      ...Object.entries(options.headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]),
      options.url,
    ];
    const { stdout } = await run("h2load", args).catch((err: NodeJS.ErrnoException) => {
      throw err.code === "ENOENT" ? new Error("h2load is not installed (Debian: apt-get install nghttp2-client)") : err;
    });
    const counts = /requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(stdout);
    if (!counts) throw new Error(`h2load: unexpected output\n${stdout}`);
    const latencies = createHistogram();
    let failures = counts.slice(1).reduce((sum, n) => sum + Number(n), 0);
    for (const line of readFileSync(logFile, "utf8").split("\n")) {
      const [, status, micros] = line.split("\t");
      if (status === "200") latencies.record(Math.max(1, Number(micros)));
      // Status 0: a request of the warm-up whose headers came before the measured run did; it is neither.
      else if (status !== undefined && status !== "0") failures++;
    }
    const ok = latencies.count;
    return { rps: ok / seconds, p99Ms: ok ? latencies.percentile(99) / 1000 : 0, ok, okWithWarmup: ok, failures, latencies };
  };
