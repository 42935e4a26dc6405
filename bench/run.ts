import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { GRPC_INTROSPECT_PATH, grpcIntrospectionLoad, introspectionCall } from "./grpcLoad.js";
import { h2loadInstalled, h2loadRun } from "./h2load.js";
import { combined, CONNECTIONS, httpAmount, httpLoad, type HttpRequest, type LoadResult } from "./httpLoad.js";
import { pacedLoadInOwnProcess, pooled, type PacedRun } from "./pacedLoad.js";
import {
  assertActive,
  BENCH_BASIC,
  clientTokens,
  databaseFile,
  FORM,
  INTROSPECT_PATH,
  largestRss,
  seedStoredTokens,
  startOurs,
  TOKEN_PATH,
  USERINFO_PATH,
  userTokens,
  basicAuth,
  type OurServer,
} from "./ours.js";
import { runNode, startService, type Service } from "./processes.js";
import { OIDC_CLIENT, OIDC_RESOURCE } from "./references/shared.js";
import { machineDescription, passes, ratioOf, writeReport, type Figure, type Report } from "./report.js";
import { parsePrometheusText, sampleValue } from "../test/support/prometheus.js";

const USAGE = `usage: npm run bench -- [--quick] [--workers N] [--seconds S] [--fast-paths]

  --quick      every scenario, shorter runs and smaller data sets (under 2 minutes)
  --fast-paths only our server with every fast path against itself with each off (IDENTITY_PLAIN_PATHS), in turns
  --workers N  run our server as serve --workers N (node:cluster, one port) and report scaling
  --seconds S  length of each measured run (default 10, or 3 with --quick)
`;

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: "boolean" },
    workers: { type: "string" },
    seconds: { type: "string" },
    "fast-paths": { type: "boolean" },
    help: { type: "boolean" },
  },
});
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const quick = flags.quick ?? false;
const workers = Number(flags.workers ?? 1);
if (!Number.isInteger(workers) || workers < 1) throw new Error(`--workers: a whole number of at least 1, not ${flags.workers}`);

const settings = {
  seconds: Number(flags.seconds ?? (quick ? 3 : 10)),
  warmupSeconds: quick ? 1 : 3,
  /** Stored tokens compared against SMALL_STORE in the index-size row. */
  largeStore: quick ? 100_000 : 1_000_000,
  smallStore: 10_000,
  /** Tokens issued by the server before its RSS is read. */
  issued: quick ? 20_000 : 1_000_000,
  /** Short runs each of the loads compared in one row is split into, taken in turns (see inTurns). */
  turns: quick ? 3 : 5,
  /** Different tokens each load cycles through. */
  tokens: 100,
  userTokens: 16,
};

/** The gRPC row's load client: h2load where installed, else our Node one (which costs the server a core's share). */
const grpcClient = h2loadInstalled() ? "h2load" : "node:http2";

/** Node's flags for the TypeScript reference servers and clients the bench starts. */
const tsx = ["--import", "tsx"];
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const rate = (r: LoadResult) => `${Math.round(r.rps).toLocaleString("en-US")} req/s, p99 ${r.p99Ms.toFixed(1)} ms${r.failures ? `, ${r.failures} FAILED` : ""}`;
const failed = (...results: LoadResult[]) => {
  const count = results.reduce((n, r) => n + r.failures, 0);
  return count > 0 ? `${count} failed responses` : undefined;
};

/** Build dist/ when any source file is newer than it: the server under test is the built JavaScript. */
function ensureBuilt(): void {
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
      const path = join(dir, entry.name);
      return Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
    }, 0);
  let built = 0;
  try {
    built = statSync("dist/src/main.js").mtimeMs;
  } catch {
    // not built yet
  }
  if (Math.max(newest("src"), newest("gen")) > built) {
    log("building dist/ (npm run build)");
    execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" });
  }
}

const post = (path: string, body: string, headers: Record<string, string> = {}): HttpRequest => ({
  method: "POST",
  path,
  headers: { "content-type": FORM, ...headers },
  body,
});
const form = (params: Record<string, string>) => new URLSearchParams(params).toString();
const load = (url: string, requests: HttpRequest[], extra: { overallRate?: number; seconds?: number; warmupSeconds?: number } = {}) =>
  httpLoad({ url, requests, seconds: settings.seconds, warmupSeconds: settings.warmupSeconds, ...extra });

/** One of the loads `inTurns` runs: `seconds` of load after `warmupSeconds` of warm-up. */
type TurnLoad = (seconds: number, warmupSeconds: number) => Promise<LoadResult>;

/**
 * Loads that are compared with each other, each run for the run's length in
 * all but in `settings.turns` short runs taken in turns (a, b, a, b...), the
 * first of each after its warm-up. These machines' speed drifts by up to 2x
 * within minutes, and loads measured one after the other saw different
 * minutes: the same build's ratios moved by ±20% between full runs.
 */
async function inTurns(loads: readonly TurnLoad[]): Promise<LoadResult[]> {
  const runs = loads.map((): LoadResult[] => []);
  const seconds = settings.seconds / settings.turns;
  for (let turn = 0; turn < settings.turns; turn++) {
    for (const [i, run] of loads.entries()) runs[i]!.push(await run(seconds, turn === 0 ? settings.warmupSeconds : 0));
  }
  return runs.map(combined);
}

async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), "identity-bench-"));
  if (flags["fast-paths"]) return measureFastPaths(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
  const started = Date.now();
  const report: Report = {
    date: new Date().toISOString().slice(0, 10),
    machine: machineDescription(),
    mode: quick ? "quick" : "full",
    workers,
    rows: [],
    references: [],
    scaling: [],
    notes: [],
  };
  const figure = (what: string, value: number, unit = "req/s"): number => {
    report.references.push({ what, value, unit } satisfies Figure);
    return value;
  };
  log(`mode ${report.mode}, ${settings.seconds} s runs after ${settings.warmupSeconds} s warm-up, ${CONNECTIONS} connections; files in ${dir}`);
  if (grpcClient !== "h2load") {
    report.notes.push(
      "h2load is not installed (Debian: apt-get install nghttp2-client), so the gRPC row and the bare node:http2 reference were driven by bench/grpcLoad.ts, whose own CPU per call (200-300 µs) exceeds the server's.",
    );
  }

  try {
    // --- the references: bare node:http and node:http2, node-oidc-provider, the RS256 ceiling ---
    const [bare, bare2, oidc] = await Promise.all([
      startService({ name: "bare node:http", args: [...tsx, "bench/references/bareHttp.ts"], logFile: join(dir, "bare.log"), ready: /listening on (\S+)/ }),
      startService({ name: "bare node:http2", args: [...tsx, "bench/references/bareHttp2.ts"], logFile: join(dir, "bare2.log"), ready: /listening on (\S+)/ }),
      startService({
        name: "node-oidc-provider",
        args: [...tsx, "bench/references/oidcProvider.ts"],
        env: { NODE_ENV: "production" },
        logFile: join(dir, "oidc-provider.log"),
        ready: /listening on (\S+)/,
      }),
    ]);

    log("crypto ceiling");
    const ceiling = JSON.parse(await runNode([...tsx, "bench/references/cryptoCeiling.ts", String(Math.max(2, settings.seconds / 2)), "node:crypto"])) as Record<string, number>;
    figure("RS256 sign through node:crypto, synchronous (ops/s)", ceiling.cryptoSyncSign!, "ops/s");
    figure("RS256 verify through node:crypto (ops/s)", ceiling.cryptoVerify!, "ops/s");

    log("bare node:http2");
    const bare2Result = await grpcLoad(bare2.ready[1]!, ["x"], dir);
    log(`  ${rate(bare2Result)}`);
    figure("bare node:http2, gRPC unary call, same load client as our gRPC row", bare2Result.rps);

    const oidcFigures = await measureOidcProvider(oidc);
    figure("node-oidc-provider client_credentials, opaque", oidcFigures.opaque.rps);
    await bare2.stop();

    // --- our server: the throughput rows, latency, memory ---
    log(`our server (${workers === 1 ? "one process" : `${workers} workers`})`);
    const ours = await startOurs({ dir, name: "main", workers });
    // The bare server is measured in turns with the two rows it is the reference of.
    const bareRequest = post("/", form({ token: "x".repeat(300), grant_type: "client_credentials" }));
    const throughput = await measureThroughput(ours, {
      clientCredentials: [oidcFigures.jwt, joseSigning],
      introspection: async () => [
        (seconds, warmupSeconds) => load(bare.ready[1]!, [bareRequest], { seconds, warmupSeconds }),
        await oidcFigures.introspection(),
      ],
    });
    const [oidcJwt, joseSign] = throughput.clientCredentialsReferences as [LoadResult, LoadResult];
    log(`    node-oidc-provider client_credentials, JWT ${rate(oidcJwt)}`);
    log(`    jose RS256 sign, 16 in flight ${Math.round(joseSign.rps).toLocaleString("en-US")} ops/s`);
    figure("node-oidc-provider client_credentials, RS256 JWT, in turns with ours", oidcJwt.rps);
    figure("RS256 sign through jose, 16 in flight, in turns with our client_credentials (ops/s)", joseSign.rps, "ops/s");
    const [bareInTurns, oidcIntrospection] = throughput.introspectionReferences as [LoadResult, LoadResult];
    log(`    bare node:http ${rate(bareInTurns)}`);
    log(`    node-oidc-provider introspection ${rate(oidcIntrospection)}`);
    figure("bare node:http, form POST in, ~300-byte JSON out, in turns with introspection and userinfo", bareInTurns.rps);
    figure("node-oidc-provider introspection, opaque token, in turns with ours", oidcIntrospection.rps);
    await oidc.stop();
    const main = await measureOurs(ours, throughput, { url: bare.ready[1]!, request: bareRequest }, dir);
    await bare.stop();
    // What the latency row's client and this machine allow: no server answers faster.
    figure(`bare node:http, p99 at our latency row's offered rates and client, in turns with it (ms)`, main.halfPeak.bare.p99Ms, "ms");
    report.notes.push(`Latency row, p99 turn by turn: ours ${main.halfPeak.oursByTurn}; bare node:http ${main.halfPeak.bareByTurn} (ms).`);
    report.rows.push(
      {
        scenario: "client_credentials, RS256 JWT, token row in SQLite",
        ours: main.clientCredentials.rps,
        unit: "req/s",
        referenceLabel: "node-oidc-provider JWT client_credentials, in turns with this row",
        reference: oidcJwt.rps,
        comparison: "atLeast",
        target: 2,
        problem: failed(main.clientCredentials, oidcJwt),
      },
      {
        scenario: "client_credentials, RS256 JWT, token row in SQLite",
        ours: main.clientCredentials.rps,
        unit: "req/s",
        referenceLabel: "jose RS256 sign, 16 in flight, in turns with this row",
        reference: joseSign.rps,
        comparison: "atLeast",
        target: 0.7,
        problem: failed(main.clientCredentials),
      },
      {
        scenario: "introspection of a valid access token, Basic auth",
        ours: main.introspection.rps,
        unit: "req/s",
        referenceLabel: "node-oidc-provider introspection, in turns with this row",
        reference: oidcIntrospection.rps,
        comparison: "atLeast",
        target: 3,
        problem: failed(main.introspection, oidcIntrospection),
      },
      {
        scenario: "introspection of a valid access token, Basic auth",
        ours: main.introspection.rps,
        unit: "req/s",
        referenceLabel: "bare node:http, in turns with this row",
        reference: bareInTurns.rps,
        comparison: "atLeast",
        target: 0.35,
        problem: failed(main.introspection, bareInTurns),
      },
      {
        scenario: "userinfo with a Bearer token",
        ours: main.userinfo.rps,
        unit: "req/s",
        referenceLabel: "bare node:http, in turns with this row",
        reference: bareInTurns.rps,
        comparison: "atLeast",
        target: 0.35,
        problem: failed(main.userinfo, bareInTurns),
      },
      {
        scenario: `gRPC (h2c) introspection, ${CONNECTIONS} concurrent calls (${grpcClient})`,
        ours: main.grpc.result.rps,
        unit: "req/s",
        referenceLabel: main.grpc.restSameToken ? "REST introspection of the same token, in turns with this row" : "REST introspection",
        reference: (main.grpc.restSameToken ?? main.introspection).rps,
        comparison: "atLeast",
        target: 1,
        problem: failed(main.grpc.result, ...(main.grpc.restSameToken ? [main.grpc.restSameToken] : [])),
      },
      {
        scenario: `p99 latency, introspection at 50% of peak (${main.halfPeak.offered} req/s offered, each turn half the peak just before it)`,
        ours: main.halfPeak.ours.p99Ms,
        unit: "ms",
        referenceLabel: "limit",
        reference: 10,
        comparison: "atMost",
        target: 1,
        problem: failed(main.halfPeak.ours) ?? main.halfPeak.overloaded,
      },
      {
        scenario: `RSS after ${main.issued.toLocaleString("en-US")} issued tokens`,
        ours: main.rssMB,
        unit: "MB",
        referenceLabel: "limit",
        reference: 250,
        comparison: "atMost",
        target: 1,
        problem: failed(main.issuance),
      },
    );
    figure(`our RSS before the ${settings.issued.toLocaleString("en-US")}-token issuance run (MB)`, main.rssBeforeMB, "MB");
    if (quick) report.notes.push(`Quick mode: RSS after ${settings.issued.toLocaleString("en-US")} issued tokens, not 1,000,000.`);
    await ours.stop();

    // --- index size: the same introspection load on a small and a large token table ---
    // Both servers run at once, their loads in turns.
    const storeSizes = [settings.smallStore, settings.largeStore];
    const storeServers: OurServer[] = [];
    let small: LoadResult, large: LoadResult;
    try {
      const loads: TurnLoad[] = [];
      for (const count of storeSizes) {
        const name = `stored-${count}`;
        log(`seeding ${count.toLocaleString("en-US")} access-token rows`);
        await seedStoredTokens(databaseFile({ dir, name }), count);
        const server = await startOurs({ dir, name, workers });
        storeServers.push(server);
        const tokens = await clientTokens(server, settings.tokens);
        await assertActive(server, tokens[0]!);
        loads.push((seconds, warmupSeconds) => load(server.url, introspectionRequests(tokens), { seconds, warmupSeconds }));
      }
      log(`introspection with ${storeSizes.map((n) => n.toLocaleString("en-US")).join(" and ")} stored, in ${settings.turns} turns`);
      [small, large] = (await inTurns(loads)) as [LoadResult, LoadResult];
      log(`  ${rate(small)}; ${rate(large)}`);
    } finally {
      await Promise.all(storeServers.map((server) => server.stop()));
    }
    report.rows.push({
      scenario: `introspection with ${settings.largeStore.toLocaleString("en-US")} stored tokens`,
      ours: large.rps,
      unit: "req/s",
      referenceLabel: `with ${settings.smallStore.toLocaleString("en-US")} stored, in turns with this row`,
      reference: small.rps,
      comparison: "atLeast",
      target: 0.9,
      problem: failed(small, large),
    });
    if (quick) report.notes.push(`Quick mode: ${settings.largeStore.toLocaleString("en-US")} stored tokens against 10,000, not 1,000,000.`);

    // --- scaling: the same throughput rows with one process ---
    if (workers > 1) {
      log("one process, for the scaling table");
      const single = await startOurs({ dir, name: "single", workers: 1 });
      try {
        const one = await measureThroughput(single);
        report.scaling.push(
          { scenario: "client_credentials", one: one.clientCredentials.rps, many: main.clientCredentials.rps },
          { scenario: "introspection", one: one.introspection.rps, many: main.introspection.rps },
          { scenario: "userinfo", one: one.userinfo.rps, many: main.userinfo.rps },
        );
      } finally {
        await single.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  report.notes.push(
    `The load generator runs on the same machine, so every figure includes its cost; compare ratios within one run. Total time ${Math.round((Date.now() - started) / 1000)} s.`,
  );
  const markdown = writeReport(report);
  process.stdout.write(`\n${markdown}\nWritten to bench/results/latest.md and latest.json\n`);
  const failures = report.rows.filter((row) => !passes(row));
  if (failures.length > 0) {
    log(`${failures.length} of ${report.rows.length} rows miss their target: ${failures.map((r) => `${r.scenario} (${ratioOf(r).toFixed(2)}x)`).join("; ")}`);
  }
}

function introspectionRequests(tokens: string[]): HttpRequest[] {
  return tokens.map((token) => post(INTROSPECT_PATH, form({ token }), { authorization: BENCH_BASIC }));
}

/**
 * node-oidc-provider's opaque client_credentials, and the loads measured
 * later in turns with ours: JWT client_credentials and introspection.
 */
async function measureOidcProvider(oidc: Service) {
  const url = oidc.ready[1]!;
  const authorization = basicAuth(OIDC_CLIENT.id, OIDC_CLIENT.secret);
  log("node-oidc-provider: client_credentials, opaque");
  const opaque = await load(url, [post("/token", form({ grant_type: "client_credentials" }), { authorization })]);
  log(`  ${rate(opaque)}`);
  const jwtRequest = post("/token", form({ grant_type: "client_credentials", resource: OIDC_RESOURCE }), { authorization });
  const jwt: TurnLoad = (seconds, warmupSeconds) => load(url, [jwtRequest], { seconds, warmupSeconds });
  return { opaque, jwt, introspection: () => oidcIntrospection(url, authorization) };
}

/**
 * node-oidc-provider's introspection load. Its in-memory store keeps the
 * last 1,000 entries, JWT access tokens included: the tokens to introspect
 * are issued after its client_credentials loads.
 */
async function oidcIntrospection(url: string, authorization: string): Promise<TurnLoad> {
  const tokens: string[] = [];
  for (let i = 0; i < settings.tokens; i++) {
    const response = await fetch(url + "/token", {
      method: "POST",
      headers: { "content-type": FORM, authorization },
      body: form({ grant_type: "client_credentials" }),
    });
    tokens.push(((await response.json()) as { access_token: string }).access_token);
  }
  const check = await fetch(url + "/token/introspection", {
    method: "POST",
    headers: { "content-type": FORM, authorization },
    body: form({ token: tokens[0]! }),
  });
  if (((await check.json()) as { active?: boolean }).active !== true) throw new Error("node-oidc-provider: introspection says inactive");
  const requests = tokens.map((token) => post("/token/introspection", form({ token }), { authorization }));
  return (seconds, warmupSeconds) => load(url, requests, { seconds, warmupSeconds });
}

/** jose's RS256 signing rate, 16 in flight, in a process of its own; `rps` is signatures per second. */
const joseSigning: TurnLoad = async (seconds) => {
  const output = await runNode([...tsx, "bench/references/cryptoCeiling.ts", String(seconds), "jose"]);
  const { joseSign16 } = JSON.parse(output) as { joseSign16: number };
  const ok = Math.round(joseSign16 * seconds);
  return { rps: joseSign16, p50Ms: 0, p99Ms: 0, ok, okWithWarmup: ok, failures: 0 };
};

/** The references of the throughput rows, each measured in turns with the row it is compared with. */
interface ThroughputReferences {
  clientCredentials: readonly TurnLoad[];
  /** Made once client_credentials is measured. */
  introspection: () => Promise<readonly TurnLoad[]>;
}

/**
 * client_credentials, introspection and userinfo: the rows that --workers
 * scales. Each runs in turns with the references it is compared with, whose
 * results come back in the order given.
 */
async function measureThroughput(server: OurServer, references?: ThroughputReferences) {
  const withReferences = references ? " with its references" : "";
  log(`  client_credentials${withReferences}, in ${settings.turns} turns`);
  const tokenRequest = post(TOKEN_PATH, form({ grant_type: "client_credentials" }), { authorization: BENCH_BASIC });
  const [clientCredentials, ...clientCredentialsReferences] = await inTurns([
    (seconds, warmupSeconds) => load(server.url, [tokenRequest], { seconds, warmupSeconds }),
    ...(references?.clientCredentials ?? []),
  ]);
  log(`    ${rate(clientCredentials!)}`);
  const tokens = await clientTokens(server, settings.tokens);
  await assertActive(server, tokens[0]!);
  const users = await userTokens(server, settings.userTokens);
  const userinfoRequests = users.map((token): HttpRequest => ({ method: "GET", path: USERINFO_PATH, headers: { authorization: `Bearer ${token}` } }));
  const alongside = (await references?.introspection()) ?? [];
  log(`  introspection and userinfo${alongside.length > 0 ? " with their references" : ""}, in ${settings.turns} turns`);
  const [introspection, userinfo, ...introspectionReferences] = await inTurns([
    (seconds, warmupSeconds) => load(server.url, introspectionRequests(tokens), { seconds, warmupSeconds }),
    (seconds, warmupSeconds) => load(server.url, userinfoRequests, { seconds, warmupSeconds }),
    ...alongside,
  ]);
  log(`    introspection ${rate(introspection!)}`);
  log(`    userinfo ${rate(userinfo!)}`);
  return {
    clientCredentials: clientCredentials!,
    clientCredentialsReferences,
    introspection: introspection!,
    userinfo: userinfo!,
    tokens,
    introspectionReferences,
  };
}

/**
 * gRPC introspection load with the run's settings, `CONNECTIONS` calls in
 * flight on one connection. h2load sends one body, so only the first token.
 */
function grpcLoad(url: string, tokens: string[], dir: string, seconds = settings.seconds, warmupSeconds = settings.warmupSeconds): Promise<LoadResult> {
  const load = { seconds, warmupSeconds, concurrency: CONNECTIONS };
  if (grpcClient === "h2load") {
    const headers = { "content-type": "application/grpc+proto", te: "trailers", authorization: BENCH_BASIC };
    return h2loadRun({ url: url + GRPC_INTROSPECT_PATH, body: introspectionCall(tokens[0]!), headers, dir, ...load });
  }
  return grpcIntrospectionLoad({ address: new URL(url).host, tokens, authorization: BENCH_BASIC, ...load });
}

/**
 * Our gRPC row. Every call must end with grpc-status 0 and an active token;
 * h2load sees only HTTP statuses, so with it those come from our server's
 * metrics (which count the status each call's trailer carried), and REST is
 * measured again on the same token, in turns with it: concurrent lookups of
 * one token share one read, which made REST 5-14% faster in two of three runs.
 */
async function measureGrpc(server: OurServer, tokens: string[], dir: string) {
  if (grpcClient !== "h2load") {
    const result = await grpcLoad(server.url, tokens, dir);
    log(`    ${rate(result)}`);
    return { result };
  }
  const notOkBefore = await grpcNotOk(server);
  const [loaded, restSameToken] = await inTurns([
    (seconds, warmupSeconds) => grpcLoad(server.url, tokens, dir, seconds, warmupSeconds),
    (seconds, warmupSeconds) => load(server.url, introspectionRequests(tokens.slice(0, 1)), { seconds, warmupSeconds }),
  ]);
  const result = { ...loaded!, failures: loaded!.failures + (await grpcNotOk(server)) - notOkBefore };
  log(`    ${rate(result)}`);
  log(`    REST introspection of the same token, in turns with it: ${rate(restSameToken!)}`);
  return { result, restSameToken: restSameToken! };
}

/** gRPC introspections so far that did not end with grpc-status 0 and an active token, from the server's metrics. */
async function grpcNotOk(server: OurServer): Promise<number> {
  const route = `connect:${GRPC_INTROSPECT_PATH.slice(1)}`;
  const samples = parsePrometheusText(await (await fetch(server.url + "/metrics")).text());
  return samples
    .filter((s) => s.name === "identity_http_requests_total" && s.labels.route === route && s.labels.grpc_status !== "0" && s.labels.grpc_status !== "")
    .reduce((sum, s) => sum + s.value, sampleValue(samples, "identity_introspections_total", { result: "inactive" }));
}

/**
 * --fast-paths: what each fast path gains on the rows it serves. Our server
 * with every fast path, with the gRPC door off, and with all off
 * (IDENTITY_PLAIN_PATHS), each row's loads in turns; each ratio is the
 * variant before over the one after. REST never meets the gRPC door: on
 * its rows, all plain is the row reader off.
 */
async function measureFastPaths(dir: string): Promise<void> {
  interface Variant {
    server: OurServer;
    tokens: string[];
    userinfo: HttpRequest[];
  }
  const variants = new Map<string, Variant>();
  try {
    for (const [name, plain] of Object.entries({ fast: "0", "no grpc-unary": "grpc-unary", "all plain": "1" })) {
      const server = await startOurs({ dir, name: plain, workers: 1, env: { IDENTITY_PLAIN_PATHS: plain } });
      const users = await userTokens(server, settings.userTokens);
      const userinfo = users.map((token): HttpRequest => ({ method: "GET", path: USERINFO_PATH, headers: { authorization: `Bearer ${token}` } }));
      const tokens = await clientTokens(server, settings.tokens);
      await assertActive(server, tokens[0]!);
      variants.set(name, { server, tokens, userinfo });
      log(`${name}: ${/IDENTITY_PLAIN_PATHS=.*/.exec(readFileSync(join(dir, `${plain}.log`), "utf8"))?.[0]}`);
    }
    const rows: [string, string[], (v: Variant) => TurnLoad][] = [
      [`gRPC introspection (${grpcClient})`, ["fast", "no grpc-unary", "all plain"], (v) => (seconds, warmupSeconds) => grpcLoad(v.server.url, v.tokens, dir, seconds, warmupSeconds)],
      ["REST introspection", ["fast", "all plain"], (v) => (seconds, warmupSeconds) => load(v.server.url, introspectionRequests(v.tokens), { seconds, warmupSeconds })],
      ["userinfo", ["fast", "all plain"], (v) => (seconds, warmupSeconds) => load(v.server.url, v.userinfo, { seconds, warmupSeconds })],
    ];
    for (const [row, names, loadOf] of rows) {
      log(`${row}: ${names.join(", ")}, in ${settings.turns} turns`);
      const servers = names.map((name) => variants.get(name)!.server);
      const notOkBefore = await Promise.all(servers.map(grpcNotOk));
      const results = await inTurns(names.map((name) => loadOf(variants.get(name)!)));
      for (const [i, name] of names.entries()) {
        const r = { ...results[i]!, failures: results[i]!.failures + (await grpcNotOk(servers[i]!)) - notOkBefore[i]! };
        log(`  ${name}: ${rate(r)}${i > 0 ? `; ${names[i - 1]} is ${(results[i - 1]!.rps / r.rps).toFixed(2)}x this` : ""}`);
      }
    }
  } finally {
    await Promise.all([...variants.values()].map((v) => v.server.stop()));
  }
}

/** The bare node:http server and the request it is sent: the latency row's reference. */
interface BareServer {
  url: string;
  request: HttpRequest;
}

/** Seconds of paced load each paced run starts with and drops: its client opens its connections then. */
const PACED_WARMUP_SECONDS = 1;

/**
 * The latency row: in each of `settings.turns` turns, introspection at full
 * load, then our server and the bare one at half of that peak, evenly
 * paced; the p99 is over all the turns' latencies. The peak is measured just
 * before its paced runs because this machine's speed moves by up to 2x
 * within a minute: half of a peak measured minutes before was full load at
 * a slower moment (2026-11-23: 5,521 of 5,621 req/s served, p99 187 ms).
 */
async function latencyAtHalfPeak(server: OurServer, tokens: string[], bare: BareServer) {
  const seconds = settings.seconds / settings.turns;
  const paced = (url: string, requests: HttpRequest[], rate: number) =>
    pacedLoadInOwnProcess({ url, requests, rate, seconds, warmupSeconds: PACED_WARMUP_SECONDS, connections: CONNECTIONS });
  const rates: number[] = [];
  const ours: PacedRun[] = [];
  const bares: PacedRun[] = [];
  for (let turn = 0; turn < settings.turns; turn++) {
    const peak = await load(server.url, introspectionRequests(tokens), { seconds, warmupSeconds: turn === 0 ? settings.warmupSeconds : 0 });
    const halfRate = Math.round(peak.rps / 2);
    rates.push(halfRate);
    const oursRun = await paced(server.url, introspectionRequests(tokens), halfRate);
    const bareRun = await paced(bare.url, [bare.request], halfRate);
    ours.push(oursRun);
    bares.push(bareRun);
    log(`    turn ${turn + 1}, ${halfRate} req/s offered: ours ${rate(pooled([oursRun]))}; bare ${rate(pooled([bareRun]))}`);
  }
  const served = ours.map((run) => Math.round(pooled([run]).rps));
  const short = served.findIndex((rps, turn) => rps < rates[turn]! * 0.95);
  const range = [Math.min(...rates), Math.max(...rates)].map((r) => r.toLocaleString("en-US"));
  const p99s = (runs: PacedRun[]) => runs.map((run) => pooled([run]).p99Ms.toFixed(1)).join(", ");
  return {
    offered: range[0] === range[1] ? range[0]! : range.join("-"),
    ours: pooled(ours),
    bare: pooled(bares),
    oursByTurn: p99s(ours),
    bareByTurn: p99s(bares),
    overloaded: short < 0 ? undefined : `turn ${short + 1} served only ${served[short]} of ${rates[short]} req/s`,
  };
}

/** After the throughput rows: gRPC, latency at half the introspection peak, memory. */
async function measureOurs(
  server: OurServer,
  throughput: Awaited<ReturnType<typeof measureThroughput>>,
  bare: BareServer,
  dir: string,
) {
  const { tokens } = throughput;

  log(`  gRPC introspection (${grpcClient})`);
  const grpc = await measureGrpc(server, tokens, dir);

  log(`  introspection latency at half the peak, in ${settings.turns} turns with the bare server`);
  const halfPeak = await latencyAtHalfPeak(server, tokens, bare);
  log(`    ours ${rate(halfPeak.ours)}; bare ${rate(halfPeak.bare)}`);

  // Every token so far plus a top-up run to the target count, then the memory figure.
  const rssBeforeMB = largestRssMB(server);
  const issuedSoFar = throughput.clientCredentials.okWithWarmup + settings.tokens + settings.userTokens;
  const topUp = Math.max(0, settings.issued - issuedSoFar);
  log(`  issuing ${topUp.toLocaleString("en-US")} more tokens for the memory row`);
  const issuance =
    topUp > 0
      ? await httpAmount(server.url, [post(TOKEN_PATH, form({ grant_type: "client_credentials" }), { authorization: BENCH_BASIC })], topUp)
      : { rps: 0, p50Ms: 0, p99Ms: 0, ok: 0, okWithWarmup: 0, failures: 0 };
  log(`    ${rate(issuance)}`);
  const rssMB = largestRssMB(server);
  return { ...throughput, grpc, halfPeak, issuance, issued: issuedSoFar + issuance.ok, rssBeforeMB, rssMB };
}

const largestRssMB = (server: OurServer) => (largestRss(server) * 1024 * 1024) / 1e6;

main().catch((err: unknown) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
