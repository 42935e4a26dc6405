import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ResourceAdminService } from "../../gen/identity/v1/resources_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import { ConfigFileError, parseConfigFile } from "../../src/app/configFile.js";
import type { RunningServer } from "../../src/app/server.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** Issue 43 §1: resource servers from the config file, ResourceAdminService and `identity resource`. */
const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
const FROM_FILE = { uri: "https://api.example.com", name: "API", scopes: [{ name: "api:read", description: "Read your things" }] };

describe("resource servers: config file, ResourceAdminService, CLI", () => {
  let server: RunningServer;
  let client: ReturnType<typeof createClient<typeof ResourceAdminService>>;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER], resources: [FROM_FILE] } });
    client = createClient(ResourceAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
  });
  after(() => server.close());

  it("lists the config file's resource, its URI as the URL parser writes it", async () => {
    const { resources } = await client.listResources({}, admin);
    assert.deepEqual(resources.map((r) => [r.uri, r.name, r.scopes.map((s) => [s.name, s.description])]), [
      ["https://api.example.com/", "API", [["api:read", "Read your things"]]],
    ]);
    // Found by the URI as written in the file, too.
    assert.equal((await client.getResource({ uri: FROM_FILE.uri }, admin)).resource?.name, "API");
  });

  it("creates, updates and deletes one", async () => {
    const uri = "http://127.0.0.1:8123/mcp";
    const created = await client.createResource({ resource: { uri, name: "Local MCP", scopes: [{ name: "mcp:tools", description: "Use the tools" }] } }, admin);
    assert.equal(created.resource?.uri, uri);
    assert.ok(created.resource!.createdTime > 0n);
    const renamed = await client.updateResource({ resource: { uri, name: "Renamed" } }, admin);
    assert.equal(renamed.resource?.name, "Renamed");
    assert.equal(renamed.resource?.scopes.length, 1, "no scopes given keeps them");
    const cleared = await client.updateResource({ resource: { uri, replaceScopes: true } }, admin);
    assert.deepEqual(cleared.resource?.scopes, []);
    await client.deleteResource({ uri }, admin);
    await assert.rejects(client.getResource({ uri }, admin), (err: ConnectError) => err.code === Code.NotFound);
  });

  it("refuses bad input field by field, never a server fault", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ uri: "https://api.example.com/#frag", name: "x" }, "uri"],
      [{ uri: "http://api.example.com/", name: "x" }, "uri"],
      [{ uri: "relative/path", name: "x" }, "uri"],
      [{ uri: "https://b.example/", name: "" }, "name"],
      [{ uri: "https://b.example/", name: "x", scopes: [{ name: "has space", description: "" }] }, "scopes"],
      [{ uri: "https://b.example/", name: "x", scopes: [{ name: "identity:admin", description: "" }] }, "scopes"],
    ];
    for (const [resource, field] of cases) {
      await assert.rejects(client.createResource({ resource }, admin), (err: ConnectError) => {
        assert.equal(err.code, Code.InvalidArgument, JSON.stringify(resource));
        assert.match(err.rawMessage, new RegExp(`^${field}:`));
        return true;
      });
    }
    await assert.rejects(client.createResource({ resource: { uri: FROM_FILE.uri, name: "again" } }, admin), (err: ConnectError) => err.code === Code.AlreadyExists);
  });

  it("is for admins only", async () => {
    await assert.rejects(client.listResources({}), (err: ConnectError) => err.code === Code.Unauthenticated);
  });

  it("refuses a config file entry naming the entry and field", () => {
    assert.throws(() => parseConfigFile(JSON.stringify({ resources: [{ uri: "https://x.example/#a", name: "X" }] })), (err: Error) => {
      assert.ok(err instanceof ConfigFileError);
      assert.match(err.message, /^resources\[0\] \(X\): uri: /);
      return true;
    });
  });

  it("identity resource create|show|update|list|delete", async () => {
    const database = join(mkdtempSync(join(tmpdir(), "identity-resource-cli-")), "db.sqlite");
    const run = async (...args: string[]) => JSON.parse(await runAdminCommand("resource", [...args, "--database", database], {}));
    const created = await run("create", "--uri", "https://mcp.example.com/mcp", "--name", "MCP", "--scope", "mcp:tools=Use the tools = all of them", "--scope", "mcp:read");
    assert.deepEqual(created.scopes, [{ name: "mcp:tools", description: "Use the tools = all of them" }, { name: "mcp:read", description: "" }]);
    assert.equal((await run("show", "--uri", "https://mcp.example.com/mcp")).name, "MCP");
    assert.equal((await run("update", "--uri", "https://mcp.example.com/mcp", "--name", "Tools")).scopes.length, 2);
    assert.deepEqual((await run("update", "--uri", "https://mcp.example.com/mcp", "--no-scopes")).scopes, []);
    assert.deepEqual((await run("list")).map((r: { uri: string }) => r.uri), ["https://mcp.example.com/mcp"]);
    assert.deepEqual(await run("delete", "--uri", "https://mcp.example.com/mcp"), { deleted: "https://mcp.example.com/mcp" });
    await assert.rejects(run("create", "--uri", "https://mcp.example.com/#x", "--name", "bad"), /uri: /);
  });
});
