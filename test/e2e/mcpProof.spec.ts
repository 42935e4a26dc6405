import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// The SDK's own in-memory provider from its examples: nothing of the agent is ours.
import { InMemoryOAuthClientProvider } from "@modelcontextprotocol/sdk/examples/client/simpleOAuthClientProvider.js";
import type { OAuthClientMetadata } from "@modelcontextprotocol/sdk/shared/auth.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { cleanEnv, ensureBuilt, runCli, type CliProcess } from "../support/cli.js";
import { loopbackCertificate, startDocumentServer, type DocumentServer } from "../support/documentServer.js";
import { postForm, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

/**
 * Issue 43 §6, the proof: the MCP TypeScript SDK's own client, unchanged,
 * against examples/mcp-server.mjs (an MCP server built with the SDK, run as
 * an operator would) behind this service, run as `identity serve`.
 */
const ADMIN_TOKEN = "mcp-proof-admin-token-0123456789abcdef";
const OTHER = { uri: "https://other.example.com/api", name: "Another API", scopes: [] };

/** What the agent registers or publishes: a public client of the code flow. */
const agentMetadata = (name: string, redirect: string): OAuthClientMetadata => ({
  client_name: name,
  redirect_uris: [redirect],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
});

describe("the MCP proof: the SDK's client, unchanged, through examples/mcp-server.mjs", function () {
  this.timeout(120_000);
  const chromium = useChromium();
  let dir: string;
  let identity: CliProcess;
  let mcp: CliProcess;
  let issuer: string;
  let mcpUrl: string;
  let callback: CallbackServer;
  let docs: DocumentServer;

  before(async () => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), "identity-mcp-"));
    const certificate = loopbackCertificate(dir);
    docs = await startDocumentServer(certificate);
    callback = await startCallbackServer();
    const config = writeConfigFile({ applications: [TEST_APP], users: [TEST_USER], resources: [OTHER] });
    // The document server's certificate is trusted the way an operator adds a CA: NODE_EXTRA_CA_CERTS.
    identity = runCli(
      ["serve", "--port", "0", "--database", ":memory:", "--config", config, "--admin-token", ADMIN_TOKEN, "--client-registration", "open", "--allow-insecure-client-metadata"],
      cleanEnv({ NODE_EXTRA_CA_CERTS: certificate.certFile }),
    );
    [, issuer] = (await identity.waitFor(/listening on (http:\/\/\S+)/)) as unknown as [string, string];
    mcp = runCli(["--issuer", issuer, "--port", "0"], cleanEnv(), "examples/mcp-server.mjs");
    [, mcpUrl] = (await mcp.waitFor(/listening on (http:\/\/\S+)/)) as unknown as [string, string];
    // The operator registers the MCP server as a resource server (ResourceAdminService; `identity resource create` alike).
    const created = await fetch(`${issuer}/identity.v1.ResourceAdminService/CreateResource`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ resource: { uri: mcpUrl, name: "Example tools", scopes: [{ name: "mcp:tools", description: "Use the example tools" }] } }),
    });
    assert.equal(created.status, 200, await created.text());
  });
  after(async () => {
    for (const child of [mcp, identity]) child?.child.kill("SIGTERM");
    await Promise.all([mcp?.exited, identity?.exited]);
    await callback?.close();
    await docs?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What a person does in the browser the SDK sent them to: sign in, then Allow. Returns the code the client received. */
  async function signInAndAllow(url: URL, clientName: RegExp): Promise<string> {
    const { page } = chromium;
    await page.goto(url.href);
    await page.getByLabel("Username").fill(TEST_USER.name);
    await page.getByLabel("Password").fill(TEST_USER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: clientName }).waitFor();
    assert.match((await page.textContent("body")) ?? "", /Use the example tools/);
    // The consent page fits a 375 px screen, the client's URL and the resource's included.
    await page.setViewportSize({ width: 375, height: 800 });
    const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    assert.ok(width <= 375, `the page is ${width} px wide`);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    await page.waitForURL((landed) => landed.href.startsWith(callback.url));
    return new URL(page.url()).searchParams.get("code")!;
  }

  /** The agent as the SDK's example builds it; `sentTo` receives the authorization URL it would open. */
  function agent(name: string, clientMetadataUrl?: string) {
    const sentTo: URL[] = [];
    const provider = new InMemoryOAuthClientProvider(callback.url, agentMetadata(name, callback.url), (url) => void sentTo.push(url), clientMetadataUrl);
    return { provider, sentTo };
  }

  /** The whole agent: discover, register, authorize in the browser, call the tool, refresh. */
  async function agentRun({ provider, sentTo }: ReturnType<typeof agent>, clientName: RegExp): Promise<void> {
    const client = new Client({ name: "proof-agent", version: "1.0.0" });
    const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await assert.rejects(client.connect(first), UnauthorizedError, "the MCP server asks for a token; the SDK goes to authorize");
    const authorizationUrl = sentTo.at(-1)!;
    assert.ok(authorizationUrl.href.startsWith(`${issuer}/login/oauth/authorize`), "discovered from the MCP server's RFC 9728 metadata, then ours");
    assert.equal(authorizationUrl.searchParams.get("resource"), mcpUrl);
    assert.equal(authorizationUrl.searchParams.get("code_challenge_method"), "S256");
    await first.finishAuth(await signInAndAllow(authorizationUrl, clientName));
    const claims = JSON.parse(Buffer.from(provider.tokens()!.access_token.split(".")[1]!, "base64url").toString());
    assert.equal(claims.aud, mcpUrl, "a token for that one resource");

    const clientId = provider.clientInformation()!.client_id;
    const expected = [{ type: "text", text: `You are ${TEST_USER.name}, calling through ${clientId}.` }];
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    assert.deepEqual((await client.callTool({ name: "whoami", arguments: {} })).content, expected);

    // The access token goes stale: the MCP server refuses it, and the SDK refreshes and calls again.
    const before = provider.tokens()!;
    provider.saveTokens({ ...before, access_token: "stale" });
    assert.deepEqual((await client.callTool({ name: "whoami", arguments: {} })).content, expected);
    assert.notEqual(provider.tokens()!.access_token, "stale");
    assert.notEqual(provider.tokens()!.refresh_token, before.refresh_token, "the refresh token rotated");
    assert.equal(sentTo.length, 1, "refreshed, not sent to authorize again");
    await client.close();
  }

  it("registers dynamically (RFC 7591), signs the user in with consent in Chromium, calls the tool and refreshes", async () => {
    const dynamic = agent("Proof agent");
    await agentRun(dynamic, /Allow Proof agent\?/);
    assert.match(dynamic.provider.clientInformation()!.client_id, /^[A-Za-z0-9_-]+$/, "a registered client id");
  });

  it("names itself by a client ID metadata document on https, fetched once", async () => {
    const path = "/agent/client.json";
    const url = docs.origin + path;
    docs.documents.set(path, {
      body: { client_id: url, ...agentMetadata("Proof agent by URL", callback.url) },
    });
    const byUrl = agent("Proof agent by URL", url);
    await agentRun(byUrl, /Allow Proof agent by URL\?/);
    assert.equal(byUrl.provider.clientInformation()!.client_id, url);
    assert.equal(docs.fetches(path), 1);
  });

  it("attack: a token for another resource is refused by the MCP server", async () => {
    const other = await postForm(`${issuer}/api/login/oauth/access_token`, {
      grant_type: "client_credentials", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, resource: OTHER.uri,
    });
    assert.equal(other.status, 200, other.text);
    const res = await fetch(mcpUrl, {
      method: "POST",
      headers: { authorization: `Bearer ${other.body.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
    // So is a token without any resource: its audience is the client.
    const plain = await postForm(`${issuer}/api/login/oauth/access_token`, { grant_type: "client_credentials", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
    const refused = await fetch(mcpUrl, { method: "POST", headers: { authorization: `Bearer ${plain.body.access_token}`, "content-type": "application/json" }, body: "{}" });
    assert.equal(refused.status, 401);
  });
});
