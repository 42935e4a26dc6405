import { createHistogram } from "node:perf_hooks";
import { h2load } from "./h2load.js";
import { CONNECTIONS, FORM } from "./load.js";
import { clientAuth, INTROSPECT_PATH } from "./ours.js";
import { failed, number, type Row } from "./report.js";
import { log, settings } from "./settings.js";
import { BARE_BODY } from "./verification.js";

/**
 * The latency row. In each turn h2load measures our introspection peak
 * (HTTP/1.1, `CONNECTIONS` connections), then offers half of it to our
 * server and then to the bare node:http server, paced the same way: each
 * connection sends evenly spaced requests (--rps), and a second of load
 * opens the connections before the measured run. The p99s are over all
 * turns' latencies. The peak is measured just before its paced runs
 * because this machine's speed moves by up to 2x within a minute: half of a
 * peak measured minutes before can be full load at a slower moment.
 */
export async function latencyRow(oursUrl: string, bareUrl: string, token: string, dir: string): Promise<{ row: Row; note: string }> {
  const paced = (url: string, body: Record<string, string>, headers: Record<string, string>, rate?: number) =>
    h2load({ url, body: new URLSearchParams(body).toString(), headers: { "content-type": FORM, ...headers }, dir, h1: true, clients: CONNECTIONS, rate });
  const seconds = settings.seconds / settings.turns;
  const ours = createHistogram();
  const bare = createHistogram();
  const rates: number[] = [];
  const byTurn: string[] = [];
  let failures = 0;
  let overloaded: string | undefined;
  for (let turn = 0; turn < settings.turns; turn++) {
    const peak = await paced(oursUrl + INTROSPECT_PATH, { token }, clientAuth())(seconds, turn === 0 ? settings.warmupSeconds : 0);
    const rate = Math.round(peak.rps / 2);
    const oursRun = await paced(oursUrl + INTROSPECT_PATH, { token }, clientAuth(), rate)(seconds, 1);
    const bareRun = await paced(bareUrl + "/", BARE_BODY, {}, rate)(seconds, 1);
    ours.add(oursRun.latencies);
    bare.add(bareRun.latencies);
    rates.push(rate);
    failures += peak.failures + oursRun.failures + bareRun.failures;
    if (oursRun.rps < rate * 0.95) overloaded ??= `turn ${turn + 1} served ${Math.round(oursRun.rps)} of ${rate} req/s`;
    byTurn.push(`${oursRun.p99Ms.toFixed(1)}/${bareRun.p99Ms.toFixed(1)}`);
    log(`  latency turn ${turn + 1}: peak ${Math.round(peak.rps)} req/s; at ${rate} req/s p99 ours ${oursRun.p99Ms.toFixed(1)} ms, bare ${bareRun.p99Ms.toFixed(1)} ms`);
  }
  const offered = [...new Set([Math.min(...rates), Math.max(...rates)].map((r) => number(r)))].join("-");
  const row: Row = {
    scenario: `p99 latency, introspection at half our peak (${offered} req/s offered, paced by h2load)`,
    ours: ours.percentile(99) / 1000,
    unit: "ms",
    referenceLabel: "bare node:http at the same offered rate",
    reference: bare.percentile(99) / 1000,
    // No issue set a target for this ratio: it is reported.
    comparison: "atMost",
    problem: failed({ failures }) ?? overloaded,
  };
  return { row, note: `Latency row, p99 turn by turn, ours/bare (ms): ${byTurn.join(", ")}.` };
}
