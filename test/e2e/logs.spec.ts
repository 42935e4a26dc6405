import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import type { RunningServer } from "../../src/app/server.js";
import { CSRF_COOKIE } from "../../src/web/signIn.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, pkcePair, submit } from "../support/browserless.js";
import { FAKE_CLIENT, sendJsonBody, startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import { GrpcCaller } from "../support/grpc.js";
import { captureLogs, type CapturedLogs } from "../support/logs.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const TOKEN_PATH = "/api/login/oauth/access_token";
const INTROSPECT_PATH = "/api/login/oauth/introspect";
const REDIRECT_URI = TEST_APP.redirectUris[0]!;
const SECRET_KEY = "logs-test-key-0123456789abcdef0123";

/** Every token value of a token response (REST or gRPC field names). */
function tokenValues(body: Record<string, unknown>): string[] {
  const keys = ["access_token", "id_token", "refresh_token", "accessToken", "idToken", "refreshToken"];
  return keys.map((key) => body[key]).filter((v): v is string => typeof v === "string" && v !== "");
}

describe("request logs", () => {
  let server: RunningServer;
  let logs: CapturedLogs;
  let fake: FakeUpstream;
  before(async () => {
    logs = captureLogs("trace"); // the most verbose level: request headers included
    fake = await startFakeUpstream();
    const app = { ...TEST_APP, refreshExpireInHours: 1, providers: ["fake"] }; // refresh tokens issued
    server = await startTestServer({
      logger: logs.logger,
      config: { applications: [app], users: [TEST_USER], providers: [fake.provider("fake", { sharedCallback: true })] },
      overrides: { secretKey: SECRET_KEY },
    });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });

  it("never contain a secret or token, whatever the grant, front door or header", async () => {
    const secrets = new Set<string>([TEST_APP.clientSecret, TEST_USER.password]);
    const basic = basicAuth(TEST_APP.clientId, TEST_APP.clientSecret);
    secrets.add(basic.slice("Basic ".length));
    const tokensOf = (body: Record<string, unknown>) => tokenValues(body).forEach((t) => secrets.add(t));

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

    // Refresh at both endpoints, then present a used refresh token again (reuse).
    const refreshed = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "refresh_token", refresh_token: form.body.refresh_token }, { authorization: basic });
    assert.equal(refreshed.status, 200);
    tokensOf(refreshed.body);
    const again = await postForm(`${server.url}/api/login/oauth/refresh_token`, { grant_type: "refresh_token", refresh_token: refreshed.body.refresh_token }, { authorization: basic });
    assert.equal(again.status, 200);
    tokensOf(again.body);
    const reused = await postForm(`${server.url}/api/login/oauth/refresh_token`, { refresh_token: form.body.refresh_token, client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
    assert.equal(reused.status, 400);

    // Userinfo and account with the token in the header and in the query (both spellings); revocation.
    const live = (await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" }, { authorization: basic })).body;
    tokensOf(live);
    assert.equal((await fetch(`${server.url}/api/userinfo`, { headers: { authorization: `Bearer ${live.access_token}` } })).status, 200);
    assert.equal((await fetch(`${server.url}/api/userinfo?access_token=${live.access_token}`)).status, 200);
    assert.equal((await fetch(`${server.url}/api/userinfo?accessToken=${live.access_token}`)).status, 200);
    assert.equal((await fetch(`${server.url}/api/get-account`, { headers: { authorization: `Bearer ${live.access_token}` } })).status, 200);
    assert.equal((await postForm(`${server.url}/api/login/oauth/revoke`, { token: live.refresh_token }, { authorization: basic })).status, 200);
    assert.equal((await postForm(`${server.url}/api/login/oauth/revoke`, { token: live.access_token, client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret })).status, 200);
    assert.equal((await fetch(`${server.url}/api/userinfo?access_token=${live.access_token}`)).status, 401);

    // A bearer token in a header the server does not even read.
    const bearer = await fetch(`${server.url}/.well-known/jwks`, { headers: { authorization: `Bearer ${form.body.access_token}` } });
    assert.equal(bearer.status, 200);

    const text = logs.text();
    assert.ok(secrets.size >= 16, `only ${secrets.size} secrets collected`);
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret reached the logs: ${secret.slice(0, 12)}…`);

    // Not vacuous: the requests were logged, headers included, and redacted.
    const requestLines = logs.lines().filter((l) => l.msg === "request");
    assert.ok(requestLines.length >= 24, `${requestLines.length} request lines`);
    for (const route of ["/api/login/oauth/refresh_token", "/api/userinfo", "/api/get-account", "/api/login/oauth/revoke"]) {
      assert.ok(requestLines.some((l) => l.route === route), route);
    }
    const withHeaders = requestLines.filter((l) => l.headers?.authorization);
    assert.ok(withHeaders.length > 0 && withHeaders.every((l) => l.headers.authorization === "[redacted]"));
    assert.ok(requestLines.some((l) => l.headers?.cookie === "[redacted]"));
  });

  it("never contain a code, state, session, CSRF token or password of the browser flows", async () => {
    const from = logs.lines().length;
    const state = `state-${randomBytes(12).toString("hex")}`;
    const nonce = `nonce-${randomBytes(12).toString("hex")}`;
    const { verifier, challenge } = pkcePair();
    const wrongPassword = `wrong-${randomBytes(8).toString("hex")}`;
    const secrets = new Set<string>([TEST_APP.clientSecret, TEST_USER.password, state, nonce, verifier, wrongPassword]);
    const basic = basicAuth(TEST_APP.clientId, TEST_APP.clientSecret);

    // The login form: a wrong password first, then the right one.
    const jar = new CookieJar();
    const codeRequest = { state, nonce, code_challenge: challenge, code_challenge_method: "S256", scope: "openid profile" };
    const page = await browse(authorizeUrl(server.url, codeRequest), jar);
    assert.equal(page.status, 200);
    const fields = loginFormFields(await page.text());
    secrets.add(fields.request).add(fields.csrf_token);
    const refused = await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: wrongPassword }, jar);
    assert.equal(refused.status, 400);
    const signedIn = await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
    assert.equal(signedIn.status, 303);
    const code = new URL(signedIn.headers.get("location")!).searchParams.get("code")!;
    secrets.add(code).add(jar.get(SESSION_COOKIE)!);

    // The code for tokens, then the code again (a replay, which revokes them).
    const tokens = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI, code_verifier: verifier }, { authorization: basic });
    assert.equal(tokens.status, 200);
    tokenValues(tokens.body).forEach((t) => secrets.add(t));
    const replay = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI, code_verifier: verifier }, { authorization: basic });
    assert.equal(replay.status, 400);

    // Signed in: the implicit responses come at once, tokens in the Location fragment.
    for (const implicit of [{ response_type: "token" }, { response_type: "id_token", nonce }]) {
      const res = await browse(authorizeUrl(server.url, { ...implicit, state }), jar);
      assert.equal(res.status, 303);
      const fragment = new URLSearchParams(new URL(res.headers.get("location")!).hash.slice(1));
      tokenValues(Object.fromEntries(fragment)).forEach((t) => secrets.add(t));
    }
    // A client page that sends its own callback URL, code and all, as Referer.
    const referred = await fetch(authorizeUrl(server.url, codeRequest), {
      redirect: "manual",
      headers: { cookie: jar.header(), referer: `${REDIRECT_URI}?code=${code}&state=${state}` },
    });
    assert.equal(referred.status, 303);
    const secondCode = new URL(referred.headers.get("location")!).searchParams.get("code")!;
    secrets.add(secondCode);

    // The session cookie at get-account, then sign-out.
    assert.equal((await fetch(`${server.url}/api/get-account`, { headers: { cookie: jar.header() } })).status, 200);
    assert.equal((await fetch(`${server.url}/api/logout`, { redirect: "manual", headers: { cookie: jar.header() } })).status, 200);

    const lines = logs.lines().slice(from);
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    assert.equal(secrets.size, 16, "every secret is distinct and present");
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret reached the logs: ${secret.slice(0, 12)}…`);
    // No query string and no response header (Location carries codes and tokens) is logged at all.
    assert.ok(!/[?&](code|state|access_token|id_token)=/.test(text), "a query string reached the logs");
    assert.ok(!/"location"/i.test(text), "a Location header reached the logs");

    // Not vacuous: each step has its request line, under a bounded route label, naming the client.
    const requestLines = lines.filter((l) => l.msg === "request");
    const routes = requestLines.map((l) => l.route);
    assert.equal(routes.filter((r) => r === "/login/oauth/authorize").length, 4);
    assert.equal(routes.filter((r) => r === "/login").length, 2);
    assert.equal(routes.filter((r) => r === TOKEN_PATH).length, 2);
    assert.ok(requestLines.filter((l) => l.route === "/login/oauth/authorize" || l.route === "/login").every((l) => l.client_id === TEST_APP.clientId));
    assert.ok(requestLines.some((l) => l.headers?.referer === "[redacted]"));
    assert.ok(requestLines.some((l) => l.headers?.cookie === "[redacted]"));
  });

  it("never contain the upstream's code, state, tokens or client secret of a federated sign-in", async () => {
    const from = logs.lines().length;
    const secrets = new Set<string>([FAKE_CLIENT.clientSecret, SECRET_KEY, "upstream-rt"]);
    /** Press the provider button of a new authorize request and come back with `code`; the callback's answer. */
    const roundTrip = async (code: string) => {
      const jar = new CookieJar();
      const page = await browse(authorizeUrl(server.url, { state: `state-${randomBytes(12).toString("hex")}` }), jar);
      const button = await submit(`${server.url}/login/oauth/provider/fake`, loginFormFields(await page.text()), jar);
      assert.equal(button.status, 303);
      const state = new URL(button.headers.get("location")!).searchParams.get("state")!;
      secrets.add(code).add(state).add(jar.get(CSRF_COOKIE)!);
      const callback = await browse(`${server.url}/callback?${new URLSearchParams({ code, state })}`, jar);
      return { callback, jar };
    };

    // A sign-in that reaches the client: the upstream's tokens, then ours.
    const { callback, jar } = await roundTrip(`upstream-code-${randomBytes(12).toString("hex")}`);
    assert.equal(callback.status, 303);
    secrets.add(new URL(callback.headers.get("location")!).searchParams.get("code")!).add(jar.get(SESSION_COOKIE)!);
    assert.equal(fake.issuedTokens.length, 1);
    secrets.add(fake.issuedTokens[0]!);
    // One refused at the token endpoint: a failure, logged with its reason.
    fake.token = (_q, res) => sendJsonBody(res, 400, { error: "invalid_grant" });
    assert.equal((await roundTrip(`upstream-code-${randomBytes(12).toString("hex")}`)).callback.status, 502);

    const lines = logs.lines().slice(from);
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    assert.equal(secrets.size, 12, "every secret is distinct and present");
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret reached the logs: ${secret.slice(0, 12)}…`);
    assert.ok(!/[?&](code|state)=/.test(text), "a query string reached the logs");

    // Not vacuous: both round trips were logged, the outcome of each too.
    const routes = lines.filter((l) => l.msg === "request").map((l) => l.route);
    assert.equal(routes.filter((r) => r === "/callback").length, 2);
    assert.equal(routes.filter((r) => r === "/login/oauth/provider/{name}").length, 2);
    assert.ok(lines.some((l) => l.msg === "federated sign-in" && l.provider === "fake"));
    assert.ok(lines.some((l) => l.msg === "federated sign-in failed at the provider" && l.step === "token"));
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
      await doomed.store.db.destroy();
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

/** One h2c session for REST and browser paths over HTTP/2, where the query string travels in `:path`. */
class H2Client {
  private readonly session: http2.ClientHttp2Session;
  constructor(url: string) {
    this.session = http2.connect(url);
    this.session.on("error", () => {});
  }

  request(method: string, path: string, headers: Record<string, string> = {}, form?: Record<string, string>): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: any }> {
    return new Promise((resolve, reject) => {
      const body = form && new URLSearchParams(form).toString();
      const stream = this.session.request(
        { ":method": method, ":path": path, ...(body !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}), ...headers },
        { endStream: body === undefined },
      );
      let status = 0;
      let answered: http2.IncomingHttpHeaders = {};
      let text = "";
      stream.on("response", (h) => ((status = Number(h[":status"])), (answered = h)));
      stream.setEncoding("utf8").on("data", (c: string) => (text += c));
      stream.on("end", () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {}
        resolve({ status, headers: answered, body: parsed });
      });
      stream.on("error", reject);
      if (body !== undefined) stream.end(body);
    });
  }

  close(): void {
    this.session.close();
  }
}

describe("request logs at debug level, over HTTP/2 too", () => {
  let server: RunningServer;
  let logs: CapturedLogs;
  before(async () => {
    logs = captureLogs("debug");
    const app = { ...TEST_APP, refreshExpireInHours: 1 };
    server = await startTestServer({ logger: logs.logger, config: { applications: [app], users: [TEST_USER] } });
  });
  after(() => server?.close());

  it("secrets in logs: none sent or issued reaches them, with every flow over HTTP/2 and its query strings in :path", async () => {
    const secrets = new Set<string>([TEST_APP.clientSecret, TEST_USER.password]);
    const basic = basicAuth(TEST_APP.clientId, TEST_APP.clientSecret);
    const tokensOf = (body: Record<string, unknown>) => tokenValues(body).forEach((t) => secrets.add(t));
    const h2 = new H2Client(server.url);
    const grpc = new GrpcCaller(server.url);
    try {
      // Password and client_credentials grants, credentials in the body and in Basic.
      const password = await h2.request("POST", TOKEN_PATH, {}, {
        grant_type: "password", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret,
        username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile",
      });
      assert.equal(password.status, 200);
      tokensOf(password.body);
      const cc = await h2.request("POST", TOKEN_PATH, { authorization: basic }, { grant_type: "client_credentials" });
      assert.equal(cc.status, 200);
      tokensOf(cc.body);

      // Credentials in the query string, wherever a careless client puts them: refused, and not logged.
      const wrongPassword = `wrong-${randomBytes(8).toString("hex")}`;
      secrets.add(wrongPassword);
      const inQuery = new URLSearchParams({ grant_type: "password", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, username: TEST_USER.name, password: wrongPassword });
      assert.equal((await h2.request("POST", `${TOKEN_PATH}?${inQuery}`)).status, 400);
      const refreshInQuery = await h2.request("POST", `/api/login/oauth/refresh_token?refresh_token=${password.body.refresh_token}`, { authorization: basic });
      assert.equal(refreshInQuery.status, 400);

      // The authorization code through the login form, its code exchanged over HTTP/2.
      const { verifier, challenge } = pkcePair();
      const state = `state-${randomBytes(12).toString("hex")}`;
      secrets.add(verifier).add(state);
      const jar = new CookieJar();
      const page = await browse(authorizeUrl(server.url, { state, code_challenge: challenge, code_challenge_method: "S256", scope: "openid profile" }), jar);
      const fields = loginFormFields(await page.text());
      secrets.add(fields.csrf_token).add(fields.request);
      const signedIn = await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
      assert.equal(signedIn.status, 303);
      const code = new URL(signedIn.headers.get("location")!).searchParams.get("code")!;
      secrets.add(code).add(jar.get(SESSION_COOKIE)!);
      const exchanged = await h2.request("POST", TOKEN_PATH, { authorization: basic }, { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
      assert.equal(exchanged.status, 200);
      tokensOf(exchanged.body);
      // Signed in, over HTTP/2: the authorize request's query and the answer's Location carry state and tokens.
      const implicit = await h2.request("GET", new URL(authorizeUrl(server.url, { response_type: "token", state })).pathname + new URL(authorizeUrl(server.url, { response_type: "token", state })).search, { cookie: jar.header() });
      assert.equal(implicit.status, 303);
      tokensOf(Object.fromEntries(new URLSearchParams(new URL(String(implicit.headers.location)).hash.slice(1))));

      // Refresh at both endpoints.
      const refreshed = await h2.request("POST", TOKEN_PATH, { authorization: basic }, { grant_type: "refresh_token", refresh_token: exchanged.body.refresh_token });
      assert.equal(refreshed.status, 200);
      tokensOf(refreshed.body);
      const again = await h2.request("POST", "/api/login/oauth/refresh_token", { authorization: basic }, { grant_type: "refresh_token", refresh_token: refreshed.body.refresh_token });
      assert.equal(again.status, 200);
      tokensOf(again.body);

      // Introspection over REST (HTTP/2) and gRPC; gRPC grants too.
      assert.equal((await h2.request("POST", INTROSPECT_PATH, { authorization: basic }, { token: again.body.access_token })).body.active, true);
      const viaGrpc = await grpc.call("TokenService", "Token", { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" }, { authorization: basic });
      tokensOf(viaGrpc);
      assert.equal((await grpc.call("IntrospectionService", "Introspect", { token: viaGrpc.access_token, client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret })).active, true);
      await grpc.call("IntrospectionService", "GetUserInfo", { access_token: viaGrpc.access_token });

      // Userinfo with the token in the query string, both spellings, then revocation.
      assert.equal((await h2.request("GET", `/api/userinfo?accessToken=${again.body.access_token}`)).status, 200);
      assert.equal((await h2.request("GET", `/api/userinfo?access_token=${again.body.access_token}`)).status, 200);
      assert.equal((await h2.request("POST", "/api/login/oauth/revoke", { authorization: basic }, { token: again.body.refresh_token })).status, 200);
      assert.equal((await h2.request("POST", "/api/login/oauth/revoke", {}, { token: again.body.access_token, client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret })).status, 200);

      // Sign-out with the ID token as hint, in the query string.
      const hinted = await h2.request("GET", `/api/logout?id_token_hint=${exchanged.body.id_token}`, { cookie: jar.header() });
      assert.equal(hinted.status, 200);
    } finally {
      h2.close();
      grpc.close();
    }

    const text = logs.text();
    assert.ok(secrets.size >= 20, `only ${secrets.size} secrets collected`);
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret reached the logs: ${secret.slice(0, 12)}…`);

    // Not vacuous: debug lines carry the HTTP/2 headers, :path among them, without its query.
    const requestLines = logs.lines().filter((l) => l.msg === "request");
    const paths = requestLines.map((l) => l.headers?.[":path"]).filter((p): p is string => typeof p === "string");
    for (const path of ["/api/userinfo?[redacted]", "/api/logout?[redacted]", "/login/oauth/authorize?[redacted]", "/identity.v1.TokenService/Token"]) {
      assert.ok(paths.includes(path), `${path} in ${JSON.stringify(paths)}`);
    }
    assert.ok(paths.every((p) => !p.includes("?") || p.endsWith("?[redacted]")), JSON.stringify(paths));
  });
});
