import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { buildRouteTable } from "../../src/rest/routes.js";
import { serviceBindings } from "../../src/rpc/services.js";
import { fuzzServer, WarningLog, startFuzzServer, type EndpointResult } from "../support/fuzz/run.js";
import { basicAuth, postForm, TEST_APP } from "../support/server.js";

/**
 * Cases per endpoint here; `npm run fuzz` runs 10,000 with a fresh seed.
 * gRPC-Web and raw HTTP/2 framing, beyond the protocols the issue names, get
 * fewer: every case that fails client authentication costs an scrypt.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 50);
const EXTRA_PROTOCOL_RUNS = Math.ceil(RUNS / 3);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const runsFor = (endpoint: string) => (/^(gRPC-Web|gRPC frames) /.test(endpoint) ? EXTRA_PROTOCOL_RUNS : RUNS);

describe(`hostile input: a seed-stable fuzz sample (${RUNS} cases per endpoint, seed ${SEED})`, function () {
  this.timeout(240_000);
  const logger = new WarningLog();
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  let server: RunningServer;
  let results: EndpointResult[];

  before(async () => {
    process.on("unhandledRejection", onRejection);
    server = await startFuzzServer(logger);
    results = await fuzzServer(server, { numRuns: runsFor, seed: SEED, parallel: 4 });
  });
  after(async () => {
    process.off("unhandledRejection", onRejection);
    await server?.close();
  });

  it("covers every REST path of the route table, the browser paths, and every RPC on five protocols", () => {
    const names = new Set(results.map((r) => r.name));
    for (const path of buildRouteTable(serviceBindings(server.domain)).keys()) {
      assert.ok([...names].some((n) => n.startsWith("REST ") && n.endsWith(` ${path}`)), path);
    }
    for (const path of ["/login/oauth/authorize", "/login", "/login/oauth/provider/<name>", "/callback/<name>", "/login/assets/login.css", "/api/logout"]) {
      assert.ok([...names].some((n) => n.startsWith("browser ") && n.endsWith(` ${path}`)), path);
    }
    for (const { service } of serviceBindings(server.domain)) {
      for (const method of service.methods) {
        for (const protocol of ["Connect JSON", "Connect binary", "gRPC-Web", "gRPC (grpc-js)", "gRPC frames (HTTP/2)"]) {
          assert.ok(names.has(`${protocol} /${service.typeName}/${method.name}`), `${protocol} ${method.name}`);
        }
      }
    }
  });

  it("answers every case with no 5xx and a well-formed RFC error, page, redirect or RPC status", () => {
    const failures = results.filter((r) => r.failed).map((r) => `${r.name}: ${r.report}`);
    assert.deepEqual(failures, []);
    for (const r of results) assert.equal(r.runs, runsFor(r.name), r.name);
  });

  it("logs no unexpected error and leaves no unhandled rejection", () => {
    assert.deepEqual(logger.unexpected(), []);
    assert.deepEqual(rejections, []);
  });

  it("still serves afterwards (the JWKS and a token)", async () => {
    const jwks = await fetch(`${server.url}/.well-known/jwks`);
    assert.equal(jwks.status, 200);
    assert.ok(((await jwks.json()) as { keys: unknown[] }).keys.length > 0);
    const token = await postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: "client_credentials" }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    assert.equal(token.status, 200, JSON.stringify(token.body));
  });
});
