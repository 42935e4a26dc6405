import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import { parseApplicationInput } from "../../src/accounts/applications.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import type { RunningServer } from "../../src/app/server.js";
import { freshSharedTestDatabase } from "../support/databases.js";
import { ADMIN_TOKEN, call, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const ALLOWED = "http://127.0.0.1:5173";
const UNLISTED = "https://elsewhere.example";

/** The paths a browser app on another origin calls: REST, then Connect / gRPC-Web. */
const CROSS_ORIGIN_PATHS = [
  "/api/login/oauth/access_token",
  "/api/login/oauth/refresh_token",
  "/api/login/oauth/revoke",
  "/api/userinfo",
  "/api/get-account",
  "/.well-known/openid-configuration",
  "/.well-known/jwks",
  "/identity.v1.TokenService/Token",
  "/identity.v1.IntrospectionService/GetUserInfo",
  "/identity.v1.IntrospectionService/GetAccount",
  "/identity.v1.DiscoveryService/GetJwks",
  "/identity.v1.ApplicationAdminService/ListApplications",
];

const SPA_APP = { name: "spa", clientId: "spa-client", redirectUris: [`${ALLOWED}/callback`], allowedOrigins: [ALLOWED] };

/** The response's CORS headers, by lowercase name. */
const corsHeaders = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => name.startsWith("access-control-")));
const list = (value: string | null) => (value ?? "").split(",").map((v) => v.trim().toLowerCase());

const preflight = (server: RunningServer, path: string, origin: string, method = "POST", headers = "content-type,authorization") =>
  call(`${server.url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
  });

describe("browsers on other origins (CORS)", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP, SPA_APP], users: [TEST_USER] } });
  });
  after(() => server?.close());

  for (const path of CROSS_ORIGIN_PATHS) {
    it(`answers a preflight to ${path} from an allowed origin, and none from an unlisted one`, async () => {
      const ok = await preflight(server, path, ALLOWED, "POST", "content-type,connect-protocol-version,authorization,x-grpc-web");
      assert.equal(ok.status, 204);
      assert.equal(ok.headers.get("access-control-allow-origin"), ALLOWED);
      assert.ok(list(ok.headers.get("vary")).includes("origin"));
      assert.deepEqual(list(ok.headers.get("access-control-allow-methods")), ["post", "get"]);
      const allowedHeaders = list(ok.headers.get("access-control-allow-headers"));
      for (const header of ["content-type", "connect-protocol-version", "connect-timeout-ms", "authorization", "x-grpc-web", "x-user-agent", "grpc-timeout"]) {
        assert.ok(allowedHeaders.includes(header), `${header} in ${allowedHeaders}`);
      }
      assert.equal(ok.headers.get("access-control-max-age"), "600");
      assert.equal(ok.headers.get("access-control-allow-credentials"), null, "no credentials mode");

      const refused = await preflight(server, path, UNLISTED);
      assert.deepEqual(corsHeaders(refused.headers), {}, "no allow headers for an unlisted origin");
      assert.ok(list(refused.headers.get("vary")).includes("origin"));
    });
  }

  it("sets the allowed origin and the exposed headers on answers, errors included", async () => {
    const discovery = await call(`${server.url}/.well-known/openid-configuration`, { headers: { origin: ALLOWED } });
    assert.equal(discovery.status, 200);
    assert.equal(discovery.headers.get("access-control-allow-origin"), ALLOWED);
    assert.ok(list(discovery.headers.get("vary")).includes("origin"));
    const exposed = list(discovery.headers.get("access-control-expose-headers"));
    for (const header of ["grpc-status", "grpc-message", "grpc-status-details-bin", "connect-protocol-version", "www-authenticate", "retry-after"]) {
      assert.ok(exposed.includes(header), `${header} in ${exposed}`);
    }
    assert.equal(discovery.headers.get("access-control-allow-credentials"), null);

    // An OAuth error the app must be able to read.
    const failed = await call(`${server.url}/api/login/oauth/access_token`, {
      method: "POST",
      headers: { origin: ALLOWED, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", client_id: SPA_APP.clientId, code: "nope", code_verifier: "x".repeat(43) }),
    });
    assert.equal(failed.status, 400);
    assert.equal(failed.headers.get("access-control-allow-origin"), ALLOWED);

    // A Connect call, failing for want of a token, with its status readable.
    const connect = await call(`${server.url}/identity.v1.IntrospectionService/GetAccount`, {
      method: "POST",
      headers: { origin: ALLOWED, "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
    });
    assert.equal(connect.status, 401);
    assert.equal(connect.headers.get("access-control-allow-origin"), ALLOWED);
  });

  it("answers REST get-account from an allowed origin as userinfo, readable by the app, and without CORS headers for an unlisted one", async () => {
    const token = await postForm(`${server.url}/api/login/oauth/access_token`, {
      grant_type: "password", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret,
      username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile",
    });
    assert.equal(token.status, 200, JSON.stringify(token.body));
    const authorization = `Bearer ${token.body.access_token}`;
    for (const path of ["/api/get-account", "/api/userinfo"]) {
      const allowed = await call(`${server.url}${path}`, { headers: { origin: ALLOWED, authorization } });
      assert.equal(allowed.status, 200, `${path}: ${allowed.text}`);
      assert.equal(allowed.headers.get("access-control-allow-origin"), ALLOWED, path);
      assert.equal(allowed.headers.get("access-control-allow-credentials"), null, `${path}: no credentials mode, so no session cookie rides along`);
      assert.ok(list(allowed.headers.get("access-control-expose-headers")).includes("www-authenticate"), path);
      const unlisted = await call(`${server.url}${path}`, { headers: { origin: UNLISTED, authorization } });
      assert.deepEqual(corsHeaders(unlisted.headers), {}, path);
      assert.ok(list(unlisted.headers.get("vary")).includes("origin"), path);
    }
    const account = await call(`${server.url}/api/get-account`, { headers: { origin: ALLOWED, authorization } });
    assert.equal(account.body.status, "ok");
    assert.equal(account.body.data.name, TEST_USER.name);
    // A failure the app must be able to read: no token.
    const anonymous = await call(`${server.url}/api/get-account`, { headers: { origin: ALLOWED } });
    assert.equal(anonymous.headers.get("access-control-allow-origin"), ALLOWED);
    assert.notEqual(anonymous.status, 200);
  });

  it("gives an unlisted origin the answer without CORS headers, which the browser then keeps from the script", async () => {
    const discovery = await call(`${server.url}/.well-known/openid-configuration`, { headers: { origin: UNLISTED } });
    assert.equal(discovery.status, 200);
    assert.deepEqual(corsHeaders(discovery.headers), {});
    assert.ok(list(discovery.headers.get("vary")).includes("origin"));
  });

  it("leaves every other path alone, even for an allowed origin", async () => {
    for (const path of ["/api/login/oauth/introspect", "/login/oauth/authorize", "/healthz"]) {
      const answer = await fetch(`${server.url}${path}`, {
        method: "OPTIONS",
        headers: { origin: ALLOWED, "access-control-request-method": "POST" },
      });
      await answer.arrayBuffer();
      assert.notEqual(answer.status, 204, path);
      assert.deepEqual(corsHeaders(answer.headers), {}, path);
    }
    const introspect = await call(`${server.url}/api/login/oauth/introspect`, { method: "POST", headers: { origin: ALLOWED } });
    assert.equal(introspect.headers.get("access-control-allow-origin"), null);
  });

  it("marks the answer as varying by Origin even when a request sends none", async () => {
    const jwks = await call(`${server.url}/.well-known/jwks`);
    assert.ok(list(jwks.headers.get("vary")).includes("origin"));
    assert.deepEqual(corsHeaders(jwks.headers), {});
  });

  it("follows a change of an application's allowed origins at once on this instance", async () => {
    const admin = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const allowOrigin = async () => (await preflight(server, "/api/userinfo", UNLISTED, "GET")).headers.get("access-control-allow-origin");
    assert.equal(await allowOrigin(), null);

    const { application } = await admin.updateApplication({ application: { name: SPA_APP.name, allowedOrigins: [ALLOWED, UNLISTED] } }, { headers });
    assert.deepEqual(application?.allowedOrigins, [ALLOWED, UNLISTED]);
    assert.equal(await allowOrigin(), UNLISTED);

    await admin.updateApplication({ application: { name: SPA_APP.name, allowedOrigins: [ALLOWED] } }, { headers });
    assert.equal(await allowOrigin(), null);
    await admin.deleteApplication({ name: SPA_APP.name }, { headers });
    assert.equal((await preflight(server, "/api/userinfo", ALLOWED, "GET")).headers.get("access-control-allow-origin"), null);
  });
});

describe("an application's allowedOrigins", () => {
  const parse = (allowedOrigins: unknown) => parseApplicationInput({ name: "spa", allowedOrigins }).allowedOrigins;

  it("takes origins as browsers send them: https, or http on a loopback host", () => {
    const ok = ["https://app.example.com", "https://app.example.com:8443", "http://127.0.0.1:5173", "http://localhost:3000", "http://[::1]:8080"];
    assert.deepEqual(parse(ok), ok);
  });

  it("refuses a path, a trailing slash, another spelling, clear text beyond loopback and what is no origin", () => {
    const cases: [string, RegExp][] = [
      ["https://app.example.com/", /no path\): https:\/\/app\.example\.com/],
      ["https://app.example.com/spa", /is not an origin as browsers send it/],
      ["https://App.Example.com", /https:\/\/app\.example\.com/],
      ["https://app.example.com:443", /https:\/\/app\.example\.com/],
      ["http://app.example.com", /must use https/],
      ["null", /is not an origin/],
      ["*", /is not an origin/],
      ["ftp://files.example.com", /must use http or https/],
    ];
    for (const [origin, problem] of cases) {
      assert.throws(() => parse([origin]), (err: Error) => /allowedOrigins: /.test(err.message) && problem.test(err.message), origin);
    }
  });

  it("is refused at start from a config file, naming the entry", async () => {
    await assert.rejects(
      startTestServer({ config: { applications: [{ ...SPA_APP, allowedOrigins: ["http://app.example.com"] }], users: [] } }),
      /applications\[0\] \(spa\): allowedOrigins: "http:\/\/app\.example\.com" must use https/,
    );
  });

  it("is set by `identity app create|update --allowed-origin`", async () => {
    const shared = freshSharedTestDatabase();
    try {
      const run = async (...args: string[]) => JSON.parse(await runAdminCommand("app", [...args, "--database", shared.url], {}));
      const created = await run("create", "--name", "spa", "--allowed-origin", ALLOWED, "--allowed-origin", "https://app.example.com");
      assert.deepEqual(created.allowedOrigins, [ALLOWED, "https://app.example.com"]);
      const updated = await run("update", "--name", "spa", "--allowed-origin", "https://app.example.com");
      assert.deepEqual(updated.allowedOrigins, ["https://app.example.com"]);
      assert.deepEqual((await run("show", "--name", "spa")).allowedOrigins, ["https://app.example.com"]);
      await assert.rejects(run("update", "--name", "spa", "--allowed-origin", "https://app.example.com/"), /allowedOrigins: .*no path/);
    } finally {
      await shared.dispose();
    }
  });
});
