import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, pkcePair, signIn, submit } from "../support/browserless.js";
import { GrpcCaller } from "../support/grpc.js";
import { parsePrometheusText, sampleValue, type Sample } from "../support/prometheus.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const TOKEN_PATH = "/api/login/oauth/access_token";
const INTROSPECT_PATH = "/api/login/oauth/introspect";

describe("health probes", () => {
  let server: RunningServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it("/healthz says the process is alive", async () => {
    const res = await fetch(`${server.url}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok" });
  });

  it("/readyz says ready while the database answers and a key signs", async () => {
    const res = await fetch(`${server.url}/readyz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ready", checks: { database: "ok", signing_keys: "ok" } });
  });

  it("refuses methods other than GET and HEAD", async () => {
    const res = await fetch(`${server.url}/readyz`, { method: "POST" });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "GET, HEAD");
  });

  it("/readyz goes 503 when the database is gone, while /healthz stays 200", async () => {
    const doomed = await startTestServer();
    try {
      await doomed.store.db.destroy();
      const ready = await fetch(`${doomed.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), { status: "not_ready", checks: { database: "unreachable", signing_keys: "ok" } });
      assert.equal((await fetch(`${doomed.url}/healthz`)).status, 200);
    } finally {
      await doomed.close();
    }
  });
});

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

describe("/metrics", () => {
  let server: RunningServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it("parses as Prometheus text and moves with the requests made", async () => {
    const metricsUrl = `${server.url}/metrics`;
    const before = await scrape(metricsUrl);
    const auth = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };

    const password = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }, auth);
    assert.equal(password.status, 200);
    const wrong = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "password", username: TEST_USER.name, password: "nope" }, auth);
    assert.equal(wrong.status, 400);
    assert.equal((await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "client_credentials" }, auth)).status, 200);
    const active = await postForm(`${server.url}${INTROSPECT_PATH}`, { token: password.body.access_token }, auth);
    assert.equal(active.body.active, true);
    const inactive = await postForm(`${server.url}${INTROSPECT_PATH}`, { token: "not-a-token" }, auth);
    assert.equal(inactive.body.active, false);
    // Connect, and gRPC failing client authentication (the HTTP status stays 200).
    await createClient(DiscoveryService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" })).getJwks({});
    const grpc = new GrpcCaller(server.url);
    try {
      await assert.rejects(grpc.call("IntrospectionService", "Introspect", { token: "x", client_id: TEST_APP.clientId, client_secret: "wrong" }), { code: 16 });
    } finally {
      grpc.close();
    }
    assert.equal((await fetch(`${server.url}/no/such/path-4d2c9`)).status, 404);

    const after = await scrape(metricsUrl);
    const delta = (name: string, labels: Record<string, string> = {}) => sampleValue(after, name, labels) - sampleValue(before, name, labels);

    assert.equal(delta("identity_tokens_issued_total", { grant_type: "password" }), 1);
    assert.equal(delta("identity_tokens_issued_total", { grant_type: "client_credentials" }), 1);
    assert.equal(delta("identity_introspections_total", { result: "active" }), 1);
    assert.equal(delta("identity_introspections_total", { result: "inactive" }), 1);
    assert.equal(delta("identity_login_failures_total"), 1);
    const requests = (labels: Record<string, string>) => delta("identity_http_requests_total", labels);
    assert.equal(requests({ route: TOKEN_PATH, method: "POST", status: "200" }), 2);
    assert.equal(requests({ route: TOKEN_PATH, method: "POST", status: "400" }), 1);
    assert.equal(requests({ route: INTROSPECT_PATH, method: "POST", status: "200" }), 2);
    assert.equal(requests({ route: "connect:identity.v1.DiscoveryService/GetJwks", method: "POST", status: "200" }), 1);
    assert.equal(requests({ route: "connect:identity.v1.IntrospectionService/Introspect", status: "200", grpc_status: "16" }), 1);
    assert.equal(requests({ route: "other", method: "GET", status: "404" }), 1);
    assert.equal(requests({ route: "/metrics", method: "GET", status: "200" }), 1); // the first scrape
    // A scrape reports each request once, however often it is scraped.
    const again = await scrape(metricsUrl);
    const sinceAfter = (labels: Record<string, string>) =>
      sampleValue(again, "identity_http_requests_total", labels) - sampleValue(after, "identity_http_requests_total", labels);
    assert.equal(sinceAfter({ route: TOKEN_PATH, method: "POST", status: "200" }), 0);
    assert.equal(sinceAfter({ route: "/metrics", method: "GET", status: "200" }), 1);
    assert.equal(delta("identity_http_request_duration_seconds_count", { route: TOKEN_PATH, method: "POST" }), 3);
    // Raw paths never become labels.
    assert.ok(!after.some((s) => Object.values(s.labels).some((v) => v.includes("path-4d2c9"))));

    assert.ok(after.some((s) => s.name === "identity_db_pool_connections_in_use"));
    assert.ok(after.some((s) => s.name === "identity_db_pool_pending_acquires"));
    for (const name of ["identity_refresh_token_reuse_total", "identity_token_family_revocations_total", "identity_login_lockouts_total"]) {
      assert.ok(after.some((s) => s.name === name), name);
    }
    assert.ok(after.some((s) => s.name === "process_cpu_user_seconds_total"));
    assert.ok(after.some((s) => s.name === "nodejs_heap_size_used_bytes"));
  });

  it("counts refresh token reuse and the family revocation it causes", async () => {
    const withRefresh = await startTestServer({ config: { applications: [{ ...TEST_APP, refreshExpireInHours: 1 }], users: [TEST_USER] } });
    try {
      const auth = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };
      const first = await postForm(`${withRefresh.url}${TOKEN_PATH}`, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }, auth);
      const refresh = () => postForm(`${withRefresh.url}${TOKEN_PATH}`, { grant_type: "refresh_token", refresh_token: first.body.refresh_token }, auth);
      assert.equal((await refresh()).status, 200);
      assert.equal((await refresh()).status, 400); // reuse: the family is revoked
      const samples = await scrape(`${withRefresh.url}/metrics`);
      assert.equal(sampleValue(samples, "identity_tokens_issued_total", { grant_type: "refresh_token" }), 1);
      assert.equal(sampleValue(samples, "identity_refresh_token_reuse_total"), 1);
      assert.equal(sampleValue(samples, "identity_token_family_revocations_total"), 1);
    } finally {
      await withRefresh.close();
    }
  });

  it("counts the browser flows: codes, implicit tokens, code replay, form failures and lock-outs, under bounded routes", async () => {
    const browser = await startTestServer({ overrides: { loginMaxFailures: 2 } });
    try {
      const auth = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };
      const { verifier, challenge } = pkcePair();
      const { location, jar } = await signIn(browser, { code_challenge: challenge, code_challenge_method: "S256" });
      const redeem = () =>
        postForm(
          `${browser.url}${TOKEN_PATH}`,
          { grant_type: "authorization_code", code: location.searchParams.get("code")!, redirect_uri: TEST_APP.redirectUris[0]!, code_verifier: verifier },
          auth,
        );
      assert.equal((await redeem()).status, 200);
      assert.equal((await redeem()).status, 400); // replay: the tokens issued from the code are revoked
      assert.equal((await browse(authorizeUrl(browser.url, { response_type: "token" }), jar)).status, 303);
      assert.equal((await browse(authorizeUrl(browser.url, { response_type: "id_token", nonce: "n-1" }), jar)).status, 303);

      // One failure on the form and one at the password grant lock the name (the policy is shared).
      const fresh = new CookieJar();
      const page = await browse(authorizeUrl(browser.url), fresh);
      const fields = loginFormFields(await page.text());
      assert.equal((await submit(`${browser.url}/login`, { ...fields, username: "mallory", password: "guess-1" }, fresh)).status, 400);
      const guess = await postForm(`${browser.url}${TOKEN_PATH}`, { grant_type: "password", username: "mallory", password: "guess-2" }, auth);
      assert.equal(guess.status, 400);
      assert.equal((await postForm(`${browser.url}${TOKEN_PATH}`, { grant_type: "password", username: "mallory", password: "guess-3" }, auth)).body.error, "invalid_grant");
      assert.equal((await fetch(`${browser.url}/login/assets/login.css`)).status, 200);
      const provider = await submit(`${browser.url}/login/oauth/provider/some-provider-8c1e`, fields, fresh);
      assert.equal(provider.status, 404);

      const samples = await scrape(`${browser.url}/metrics`);
      const value = (name: string, labels: Record<string, string> = {}) => sampleValue(samples, name, labels);
      assert.equal(value("identity_tokens_issued_total", { grant_type: "authorization_code" }), 1);
      assert.equal(value("identity_tokens_issued_total", { grant_type: "implicit" }), 2);
      assert.equal(value("identity_token_family_revocations_total"), 1);
      assert.equal(value("identity_login_failures_total"), 2);
      assert.equal(value("identity_login_lockouts_total"), 1);
      const requests = (labels: Record<string, string>) => value("identity_http_requests_total", labels);
      assert.equal(requests({ route: "/login/oauth/authorize", method: "GET", status: "200" }), 2);
      assert.equal(requests({ route: "/login/oauth/authorize", method: "GET", status: "303" }), 2);
      assert.equal(requests({ route: "/login", method: "POST", status: "303" }), 1);
      assert.equal(requests({ route: "/login", method: "POST", status: "400" }), 1);
      assert.equal(requests({ route: "/login/assets/login.css", method: "GET", status: "200" }), 1);
      assert.equal(requests({ route: "/login/oauth/provider/{name}", method: "POST", status: "404" }), 1);
      assert.equal(requests({ route: "other" }), 0);
      assert.ok(!samples.some((s) => Object.values(s.labels).some((v) => v.includes("some-provider-8c1e"))));
    } finally {
      await browser.close();
    }
  });

  it("can be served on a port of its own, and then not on the main one", async () => {
    const separate = await startTestServer({ overrides: { metrics: { port: 0 } } });
    try {
      assert.ok(separate.metricsUrl && !separate.metricsUrl.startsWith(separate.url));
      await fetch(`${separate.url}/healthz`);
      const samples = await scrape(separate.metricsUrl);
      assert.equal(sampleValue(samples, "identity_http_requests_total", { route: "/healthz", status: "200" }), 1);
      assert.equal((await fetch(`${separate.url}/metrics`)).status, 404);
    } finally {
      await separate.close();
    }
  });

  it("can be turned off", async () => {
    const off = await startTestServer({ overrides: { metrics: "off" } });
    try {
      assert.equal(off.metricsUrl, undefined);
      assert.equal((await fetch(`${off.url}/metrics`)).status, 404);
      assert.equal((await fetch(`${off.url}/healthz`)).status, 200);
    } finally {
      await off.close();
    }
  });
});
