#!/usr/bin/env node
// An MCP server with one tool, protected by this identity service (docs/mcp.md).
//
//   node examples/mcp-server.mjs --issuer https://id.example.com --port 8000 [--host 127.0.0.1] [--resource URI]
//
// It needs `npm i @modelcontextprotocol/sdk jose` in your own project. The
// resource URI (default http://<host>:<port>/mcp) must be a `resources` entry
// of the identity service: it is the `aud` every token for this server carries.
import http from "node:http";
import { parseArgs } from "node:util";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const { values } = parseArgs({
  options: { issuer: { type: "string" }, port: { type: "string" }, host: { type: "string", default: "127.0.0.1" }, resource: { type: "string" } },
});
if (!values.issuer || values.port === undefined) {
  console.error("usage: node examples/mcp-server.mjs --issuer URL --port N [--host H] [--resource URI]");
  process.exit(2);
}
const issuer = values.issuer.replace(/\/+$/, "");
const SCOPE = "mcp:tools";
const MAX_BODY_BYTES = 64 * 1024;

// The authorization server's RFC 8414 metadata names its JWKS.
const asMetadata = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
const jwks = createRemoteJWKSet(new URL(asMetadata.jwks_uri));

/** The tool: it tells the caller who the token says they are. */
function mcpServer() {
  const server = new McpServer({ name: "example-tools", version: "1.0.0" });
  server.registerTool("whoami", { description: "Tell who the access token belongs to" }, async (extra) => {
    const { preferred_username: user, sub } = extra.authInfo?.extra ?? {};
    return { content: [{ type: "text", text: `You are ${user ?? sub}, calling through ${extra.authInfo?.clientId}.` }] };
  });
  return server;
}

/**
 * The access token's claims, or a reason it is refused. The audience check is
 * what stops a token issued for another resource server (RFC 8707 §3, RFC 9068 §4).
 */
async function checkToken(header, resource) {
  const token = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(header ?? "")?.[1];
  if (!token) return { error: undefined };
  try {
    const { payload } = await jwtVerify(token, jwks, { issuer, audience: resource });
    const scopes = typeof payload.scope === "string" ? payload.scope.split(" ") : [];
    if (!scopes.includes(SCOPE)) return { error: "insufficient_scope", status: 403 };
    return { auth: { token, clientId: String(payload.client_id ?? payload.azp ?? ""), scopes, expiresAt: payload.exp, resource: new URL(resource), extra: payload } };
  } catch {
    return { error: "invalid_token" };
  }
}

async function readJson(req) {
  let size = 0;
  const chunks = [];
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error("body too large");
    chunks.push(chunk);
  }
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  const origin = `http://${req.headers.host}`;
  const resource = values.resource ?? `${origin}/mcp`;
  const metadataPath = `/.well-known/oauth-protected-resource${new URL(resource).pathname}`;
  const path = new URL(req.url ?? "/", origin).pathname;
  try {
    // RFC 9728 §3: who protects this resource, and with which scopes.
    if (path === metadataPath) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ resource, authorization_servers: [issuer], scopes_supported: [SCOPE], bearer_methods_supported: ["header"] }));
    }
    if (path !== new URL(resource).pathname) return res.writeHead(404).end();
    const checked = await checkToken(req.headers.authorization, resource);
    if (!checked.auth) {
      // RFC 9728 §5.1: the challenge names the metadata, where MCP clients start.
      const error = checked.error ? `, error="${checked.error}"` : "";
      res.writeHead(checked.status ?? 401, { "www-authenticate": `Bearer resource_metadata="${origin}${metadataPath}"${error}, scope="${SCOPE}"` });
      return res.end();
    }
    req.auth = checked.auth;
    // Stateless Streamable HTTP: a server and a transport per request.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = mcpServer();
    res.on("close", () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res, req.method === "POST" ? await readJson(req) : undefined);
  } catch (err) {
    if (!res.headersSent) res.writeHead(400, { "content-type": "text/plain" }).end(String(err.message));
  }
});

httpServer.listen(Number(values.port), values.host, () => {
  const { port } = httpServer.address();
  console.log(`MCP server listening on http://${values.host}:${port}/mcp`);
});
