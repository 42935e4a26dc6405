import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import type { RunningServer } from "../../src/server.js";
import { GrpcCaller } from "../support/grpc.js";
import { captureLogs, type CapturedLogs } from "../support/logs.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const TOKEN_PATH = "/api/login/oauth/access_token";
const INTROSPECT_PATH = "/api/login/oauth/introspect";

describe("request logs", () => {
  let server: RunningServer;
  let logs: CapturedLogs;
  before(async () => {
    logs = captureLogs("trace"); // the most verbose level: request headers included
    server = await startTestServer({ logger: logs.logger });
  });
  after(() => server.close());

  it("never contain a secret or token, whatever the grant, front door or header", async () => {
    const secrets = new Set<string>([TEST_APP.clientSecret, TEST_USER.password]);
    const basic = basicAuth(TEST_APP.clientId, TEST_APP.clientSecret);
    secrets.add(basic.slice("Basic ".length));
    const tokensOf = (body: Record<string, unknown>) => {
      for (const key of ["access_token", "id_token", "refresh_token", "accessToken", "idToken", "refreshToken"]) {
        if (typeof body[key] === "string" && body[key]) secrets.add(body[key] as string);
      }
    };

    // Password grant, credentials in the form body.
    const form = await postForm(`${server.url}${TOKEN_PATH}`, {
      grant_type: "password",
      client_id: TEST_APP.clientId,
      client_secret: TEST_APP.clientSecret,
      username: TEST_USER.name,
      password: TEST_USER.password,
      scope: "openid profile email",
    });
    assert.equal(form.status, 200);
    tokensOf(form.body);

    // Password grant as JSON with Basic credentials and a session cookie.
    const cookie = randomBytes(24).toString("base64url");
    secrets.add(cookie);
    const json = await fetch(`${server.url}${TOKEN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic, cookie: `identity_session=${cookie}` },
      body: JSON.stringify({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" }),
    });
    assert.equal(json.status, 200);
    tokensOf((await json.json()) as Record<string, unknown>);

    // A wrong password is a secret too.
    const wrongPassword = `wrong-${randomBytes(8).toString("hex")}`;
    secrets.add(wrongPassword);
    const wrong = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "password", username: TEST_USER.name, password: wrongPassword }, { authorization: basic });
    assert.equal(wrong.status, 400);

    const cc = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "client_credentials" }, { authorization: basic });
    assert.equal(cc.status, 200);
    tokensOf(cc.body);

    // gRPC: the token in metadata and message fields.
    const grpc = new GrpcCaller(server.url);
    try {
      const viaGrpc = await grpc.call("TokenService", "Token", { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" }, { authorization: basic });
      tokensOf(viaGrpc);
      const active = await grpc.call("IntrospectionService", "Introspect", { token: viaGrpc.access_token, client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
      assert.equal(active.active, true);
    } finally {
      grpc.close();
    }

    // Introspection over REST and Connect, of every kind of token we hold.
    const introspect = createClient(IntrospectionService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    for (const token of [...secrets].filter((s) => s.length > 100)) {
      const rest = await postForm(`${server.url}${INTROSPECT_PATH}`, { token }, { authorization: basic });
      assert.equal(rest.status, 200);
      await introspect.introspect({ token, clientId: TEST_APP.clientId, clientSecret: TEST_APP.clientSecret });
    }
    // A bearer token in a header the server does not even read.
    const bearer = await fetch(`${server.url}/.well-known/jwks`, { headers: { authorization: `Bearer ${form.body.access_token}` } });
    assert.equal(bearer.status, 200);

    const text = logs.text();
    assert.ok(secrets.size >= 10, `only ${secrets.size} secrets collected`);
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret reached the logs: ${secret.slice(0, 12)}…`);

    // Not vacuous: the requests were logged, headers included, and redacted.
    const requestLines = logs.lines().filter((l) => l.msg === "request");
    assert.ok(requestLines.length >= 12, `${requestLines.length} request lines`);
    const withHeaders = requestLines.filter((l) => l.headers?.authorization);
    assert.ok(withHeaders.length > 0 && withHeaders.every((l) => l.headers.authorization === "[redacted]"));
    assert.ok(requestLines.some((l) => l.headers?.cookie === "[redacted]"));
  });

  it("carry request id, route, method, status, duration and client id", async () => {
    const res = await fetch(`${server.url}${TOKEN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), "x-request-id": "trace-7f3a.1" },
      body: "grant_type=client_credentials",
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-request-id"), "trace-7f3a.1");
    const line = logs.lines().find((l) => l.request_id === "trace-7f3a.1");
    assert.ok(line);
    assert.equal(line.level, "info");
    assert.equal(line.msg, "request");
    assert.equal(line.route, TOKEN_PATH);
    assert.equal(line.method, "POST");
    assert.equal(line.status, 200);
    assert.equal(line.client_id, TEST_APP.clientId);
    assert.equal(typeof line.duration_ms, "number");
    assert.equal(line.stack, undefined);
  });

  it("replace a request id that is too long or not plain, and make one up when none is sent", async () => {
    for (const sent of ["has spaces in it", "x".repeat(129), undefined]) {
      const res = await fetch(`${server.url}/healthz`, { headers: sent ? { "x-request-id": sent } : {} });
      const id = res.headers.get("x-request-id");
      assert.match(id ?? "", /^[0-9a-f-]{36}$/);
      assert.equal(logs.lines().find((l) => l.request_id === id)?.route, "/healthz");
    }
  });

  it("name the OAuth error of a refused request, without a stack", async () => {
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "password" }, { "x-request-id": "refused-1" });
    assert.equal(res.status, 401);
    const line = logs.lines().find((l) => l.request_id === "refused-1")!;
    assert.equal(line.oauth_error, "invalid_client");
    assert.equal(line.level, "info");
    assert.equal(line.stack, undefined);
  });

  it("carry the stack of an unexpected failure, on the request's own line", async () => {
    const broken = captureLogs("info");
    const doomed = await startTestServer({ logger: broken.logger });
    try {
      await doomed.domain.store.db.destroy();
      const res = await postForm(`${doomed.url}${TOKEN_PATH}`, { grant_type: "client_credentials" }, {
        authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret),
        "x-request-id": "broken-1",
      });
      assert.equal(res.status, 500);
      assert.deepEqual(res.body, { error: "server_error", error_description: "internal error" });
      const line = broken.lines().find((l) => l.request_id === "broken-1")!;
      assert.equal(line.level, "error");
      assert.equal(line.status, 500);
      assert.match(line.stack, /\n\s+at /);
    } finally {
      await doomed.close();
    }
  });
});
