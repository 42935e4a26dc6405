import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { OIDC_CLIENT, OIDC_CODE, startFakeOidc, type FakeOidc } from "../support/fakeOidc.js";
import { postJson } from "../support/oauth.js";
import { RecordingLogger, startTestServer } from "../support/server.js";

/** A service on this machine that nobody outside should reach: it counts connections and answers none. */
async function startVictim(): Promise<{ origin: string; connections: number; close(): Promise<void> }> {
  const victim = { connections: 0 } as { origin: string; connections: number; close(): Promise<void> };
  const server = net.createServer((socket) => {
    victim.connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  victim.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  victim.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return victim;
}

/** A port on this machine where nothing listens (a refused connection). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Issue #41 §3. The OIDC provider's issuer is on this machine (the fake),
 * which the operator configured without allowInsecureUrls; its discovery
 * document names endpoints on other targets: another port of this machine
 * (the victim, which counts connections), a private and a link-local address.
 * Nobody signs in: BeginLogin and CompleteLogin are anonymous.
 */
describe("SSRF through OIDC discovery (issue #41 §3)", () => {
  let fake: FakeOidc;
  let victim: Awaited<ReturnType<typeof startVictim>>;
  let silent: http.Server;
  let notFound: http.Server;
  let refusedPort: number;
  let server: RunningServer;
  let logs: RecordingLogger;
  const clock = new FakeClock();

  const originOf = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  const custom = (name: string, tokenUrl: string) => ({
    name, type: "Custom", ...OIDC_CLIENT, authUrl: "https://idp.example/auth", scope: "openid",
    tokenUrl, userInfoUrl: "https://idp.example/userinfo", favicon: "https://idp.example/favicon.ico",
  });

  before(async () => {
    fake = await startFakeOidc();
    victim = await startVictim();
    silent = http.createServer(() => {});
    notFound = http.createServer((req, res) => res.writeHead(req.url === "/page" ? 200 : 404, { "content-type": "text/html" }).end("<h1>Hello</h1>"));
    await Promise.all([silent, notFound].map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
    refusedPort = await closedPort();
    logs = new RecordingLogger();
    server = await startTestServer({
      clock,
      logger: logs,
      overrides: { federationTimeoutMs: 3000 },
      config: {
        providers: [
          { name: "remote", type: "OIDC", displayName: "Remote SSO", ...OIDC_CLIENT, issuer: fake.origin },
          { name: "lax", type: "OIDC", ...OIDC_CLIENT, issuer: fake.origin, allowInsecureUrls: true },
          custom("refused", `http://127.0.0.1:${refusedPort}/token`),
          custom("silent", `${originOf(silent)}/token`),
          custom("not-found", `${originOf(notFound)}/token`),
          custom("reset", `${victim.origin}/token`),
          custom("not-json", `${originOf(notFound)}/page`),
        ],
      },
    });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
    await victim?.close();
    for (const s of [silent, notFound]) {
      s?.closeAllConnections();
      s?.close();
    }
  });
  beforeEach(() => {
    fake.reset();
    victim.connections = 0;
    logs.lines.length = 0;
    // Past every cached discovery (an hour) and every cached failure.
    clock.advanceSeconds(2 * 60 * 60);
  });

  const begin = (provider: string) => postJson(`${server.url}/api/federation/begin-login`, { provider });

  /** Begin and, when that works, complete with a code: what an anonymous caller can make the service do. */
  async function anonymousRoundTrip(provider: string) {
    const begun = await begin(provider);
    if (begun.status !== 200) return { begun, completed: undefined };
    fake.nonce = new URL(begun.body.auth_url).searchParams.get("nonce") ?? undefined;
    const completed = await postJson(`${server.url}/api/federation/complete-login`, {
      state: begun.body.state, code: OIDC_CODE, login_secret: begun.body.login_secret, iss: fake.origin, provider,
    });
    return { begun, completed };
  }

  const TARGETS: [string, (victimOrigin: string) => string][] = [
    ["another port of this machine", (v) => `${v}/internal`],
    ["a private address", () => "https://10.0.0.1/internal"],
    ["a link-local address (cloud metadata)", () => "https://169.254.169.254/latest/meta-data"],
    ["the IPv6 loopback", () => "https://[::1]:1/internal"],
  ];
  for (const field of ["token_endpoint", "jwks_uri", "authorization_endpoint"]) {
    for (const [where, target] of TARGETS) {
      it(`refuses a discovery document whose ${field} is ${where}, before any call there`, async () => {
        fake.discovery = { [field]: target(victim.origin) };
        const { begun, completed } = await anonymousRoundTrip("remote");
        assert.equal(completed, undefined, `begin-login must fail, got ${begun.status} ${JSON.stringify(begun.body)}`);
        assert.equal(begun.status, 502);
        assert.match(begun.body.error_description, /^signing in with Remote SSO failed: Remote SSO could not be reached or its answer could not be used$/);
        assert.equal(victim.connections, 0, "nothing reached the victim");
        const line = logs.lines.find((l) => l.fields?.step === "discovery");
        assert.equal(line?.level, "warn");
        assert.match(String(line?.fields?.reason), new RegExp(`${field} that targets a loopback, private or link-local address`));
      });
    }
  }

  it("lets a provider with allowInsecureUrls use such targets (the operator allowed them)", async () => {
    fake.discovery = { token_endpoint: `${victim.origin}/internal` };
    const { completed } = await anonymousRoundTrip("lax");
    assert.ok(completed && completed.status >= 500, JSON.stringify(completed?.body));
    assert.equal(victim.connections, 1);
  });

  it("answers every failure of a call with the same error: refused, silent, 404, reset or not JSON", async () => {
    const answers = [];
    for (const provider of ["refused", "silent", "not-found", "reset", "not-json"]) {
      const { begun, completed } = await anonymousRoundTrip(provider);
      assert.equal(begun.status, 200);
      answers.push({ status: completed!.status, body: JSON.stringify(completed!.body).replaceAll(provider, "<provider>") });
    }
    for (const answer of answers) assert.deepEqual(answer, answers[0]);
    assert.match(answers[0]!.body, /could not be reached or its answer could not be used/);
    const reasons = logs.lines.filter((l) => l.fields?.step === "token").map((l) => [l.level, l.fields?.reason]);
    assert.equal(reasons.length, 5, "each failure is logged with its reason");
    assert.ok(reasons.every(([level]) => level === "warn"));
    assert.match(String(reasons[1]![1]), /gave no complete answer within 3000 ms/);
    assert.match(String(reasons[2]![1]), /answered HTTP 404/);
  });

  it("answers a failed discovery the same way, whatever the failure", async () => {
    const answers = [];
    for (const answer of [(res: http.ServerResponse) => res.writeHead(404).end(), (res: http.ServerResponse) => res.writeHead(500).end("oops"), undefined]) {
      fake.discoveryAnswer = answer;
      fake.discovery = answer ? {} : { issuer: "https://someone-else.example" };
      clock.advanceSeconds(60);
      const begun = await begin("remote");
      answers.push([begun.status, begun.body]);
    }
    for (const answer of answers) assert.deepEqual(answer, answers[0]);
  });

  it("keeps a failed discovery for 30 seconds of the injected clock, so anonymous starts cannot make the service fetch it on every request", async () => {
    fake.discoveryAnswer = (res) => res.writeHead(500).end();
    const discoveryReads = () => fake.requests.filter((r) => r.path === "/.well-known/openid-configuration").length;
    for (let i = 0; i < 5; i++) assert.equal((await begin("remote")).status, 502);
    assert.equal(discoveryReads(), 1, "one read for five starts");
    clock.advanceSeconds(29);
    assert.equal((await begin("remote")).status, 502);
    assert.equal(discoveryReads(), 1, "still cached after 29 s");
    fake.discoveryAnswer = undefined;
    clock.advanceSeconds(2);
    assert.equal((await begin("remote")).status, 200, "read again after 30 s, and now it works");
    assert.equal(discoveryReads(), 2);
  });
});
