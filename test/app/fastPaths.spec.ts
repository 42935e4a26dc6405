import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fastPathsFrom, startServer, type FastPaths, type RunningServer } from "../../src/app/server.js";
import { silentLogger } from "../../src/shared/log.js";
import { describeEachBackend } from "../support/databases.js";
import { INTROSPECT_PATH, TOKEN_PATH } from "../support/oauth.js";
import { grpcJsCall, grpcJsClients, type GrpcJsClient } from "../support/rpc.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_SECRET_HASH_COST, writeConfigFile } from "../support/server.js";

const ALL_FAST = { grpcUnary: "unary door", reads: "sqlite statements", tokenWrites: "group commit", auditWrites: "own connection", jtiWrites: "grouped" } as const;
const ALL_PLAIN = { grpcUnary: "connect", reads: "knex", tokenWrites: "one write each", auditWrites: "shared connection", jtiWrites: "one write each" } as const;

/** A client_credentials token, introspected over REST and over gRPC: both must call it active. */
async function introspectBothWays(server: RunningServer): Promise<void> {
  const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };
  const issued = await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, basic);
  assert.equal(issued.status, 200, issued.text);
  const token = String(issued.body.access_token);
  assert.equal((await postForm(server.url + INTROSPECT_PATH, { token }, basic)).body.active, true);
  const clients = grpcJsClients(server.port);
  try {
    const { response, error } = await grpcJsCall(clients.introspection as GrpcJsClient, "Introspect", { token }, basic);
    assert.equal(error, undefined);
    assert.equal(response.active, true);
  } finally {
    for (const client of Object.values(clients)) client.close();
  }
}

describe("fast paths and IDENTITY_PLAIN_PATHS", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "identity-paths-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads the switch: unset or 0 runs every fast path, 1 none, a list those it names; anything else is refused", () => {
    const all: FastPaths = { grpcUnary: true, rowReader: true, groupCommit: true, auditStaging: true, jtiBatches: true };
    assert.deepEqual(fastPathsFrom(undefined), all);
    assert.deepEqual(fastPathsFrom(""), all);
    assert.deepEqual(fastPathsFrom("0"), all);
    assert.deepEqual(fastPathsFrom("1"), { grpcUnary: false, rowReader: false, groupCommit: false, auditStaging: false, jtiBatches: false });
    assert.deepEqual(fastPathsFrom("grpc-unary"), { ...all, grpcUnary: false });
    assert.deepEqual(fastPathsFrom("row-reader, grpc-unary"), { ...all, grpcUnary: false, rowReader: false });
    assert.deepEqual(fastPathsFrom("group-commit,audit-staging,jti-batch"), { ...all, groupCommit: false, auditStaging: false, jtiBatches: false });
    assert.throws(() => fastPathsFrom("yes"), /IDENTITY_PLAIN_PATHS: 0, 1 or a comma list of grpc-unary, row-reader, group-commit, audit-staging, jti-batch, not yes/);
  });

  // CI runs the whole suite a second time with IDENTITY_PLAIN_PATHS=1: this
  // shows that the servers (and stores) the suites start then take the plain paths.
  it("starts the suite's servers on the paths this process's IDENTITY_PLAIN_PATHS selects", async () => {
    const server = await startTestServer({ database: join(dir, "suite.sqlite") });
    try {
      const plain = process.env.IDENTITY_PLAIN_PATHS === "1";
      assert.deepEqual(server.paths, plain ? ALL_PLAIN : ALL_FAST);
      assert.equal(server.store.readPath, plain ? "knex" : "sqlite statements");
      await introspectBothWays(server);
    } finally {
      await server.close();
    }
  });

  const switches = [
    ["1", ALL_PLAIN],
    ["0", ALL_FAST],
    ["grpc-unary", { ...ALL_FAST, grpcUnary: "connect" }],
    ["group-commit", { ...ALL_FAST, tokenWrites: "one write each" }],
    ["audit-staging", { ...ALL_FAST, auditWrites: "shared connection" }],
    ["jti-batch", { ...ALL_FAST, jtiWrites: "one write each" }],
  ] as const;
  for (const [value, expected] of switches) {
    it(`with IDENTITY_PLAIN_PATHS=${value}: unary gRPC by ${expected.grpcUnary}, hot reads by ${expected.reads}, token rows by ${expected.tokenWrites}, audit on the ${expected.auditWrites}; the same answers`, async () => {
      const server = await startServer(
        { port: 0, host: "127.0.0.1", database: join(dir, `switch-${value}.sqlite`), configFile: writeConfigFile({ applications: [TEST_APP] }), maxBodyBytes: 65536 },
        { logger: silentLogger, secretHashCost: TEST_SECRET_HASH_COST, fastPaths: fastPathsFrom(value) },
      );
      try {
        assert.deepEqual(server.paths, expected);
        await introspectBothWays(server);
      } finally {
        await server.close();
      }
    });
  }
});

describeEachBackend("the store suites' stores", (ctx) => {
  it("serve the hot lookups by the path IDENTITY_PLAIN_PATHS selects", () => {
    if (process.env.IDENTITY_PLAIN_PATHS === "1") assert.equal(ctx.store.readPath, "knex");
    else assert.notEqual(ctx.store.readPath, "knex");
  });
});
