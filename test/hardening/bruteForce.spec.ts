import assert from "node:assert/strict";
import { clientAddressResolver } from "../../src/http/clientAddress.js";
import { parseServeConfig } from "../../src/app/config.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { WarningLog } from "../support/fuzz/run.js";
import { grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const LOCKED = "too many failed sign-in attempts; try again later";
const LOCKOUT_SECONDS = 300;

describe("brute-force policy per client address", () => {
  const clock = new FakeClock();
  let logger: WarningLog;
  let server: RunningServer;

  async function start(overrides: Record<string, unknown> = {}): Promise<void> {
    logger = new WarningLog();
    server = await startTestServer({
      clock,
      logger,
      overrides: { loginMaxFailures: 100, loginMaxFailuresPerIp: 3, loginLockoutSeconds: LOCKOUT_SECONDS, ...overrides },
    });
  }
  afterEach(() => server.close());

  /** The password grant over REST, from whichever address X-Forwarded-For claims. */
  const passwordGrant = (username: string, password: string, forwardedFor?: string) =>
    postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "password", username, password },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}) },
    );

  /** The login form, as a browser fills it in. */
  async function loginForm(username: string, password: string): Promise<{ status: number; html: string }> {
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(server.url), jar);
    const res = await submit(`${server.url}/login`, { ...loginFormFields(await page.text()), username, password }, jar);
    return { status: res.status, html: await res.text() };
  }

  /** The password grant over gRPC (grpc-js, h2c): the address must reach through the Connect door too. */
  async function grpcPasswordGrant(username: string, password: string) {
    const { token } = grpcJsClients(server.port);
    try {
      return await grpcJsCall(token, "Token", { grant_type: "password", username, password }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    } finally {
      token.close();
    }
  }

  const lockoutLines = () => logger.lines.filter((l) => l.message === "sign-in locked after repeated failures");

  it("locks the address after failures spread over names, the password grant (REST and gRPC) and the login form, logs it without a password, and lifts it after the lockout", async () => {
    await start();
    assert.equal((await passwordGrant("nobody-1", "guess-one")).body.error, "invalid_grant");
    assert.equal((await loginForm("nobody-2", "guess-two")).status, 400);
    assert.equal((await grpcPasswordGrant("nobody-3", "guess-three")).error?.details, "invalid username or password");

    const refused = await passwordGrant(TEST_USER.name, TEST_USER.password);
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body, { error: "invalid_grant", error_description: LOCKED });
    const form = await loginForm(TEST_USER.name, TEST_USER.password);
    assert.equal(form.status, 400);
    assert.match(form.html, /Too many failed sign-in attempts; try again later\./);

    assert.equal(lockoutLines().length, 1);
    const line = lockoutLines()[0]!;
    assert.equal(line.level, "warn");
    assert.equal(line.fields?.kind, "address");
    assert.equal(line.fields?.subject, "127.0.0.1");
    assert.equal(line.fields?.until, new Date(clock.now() + LOCKOUT_SECONDS * 1000).toISOString());
    const everything = JSON.stringify(logger.lines);
    for (const secret of ["guess-one", "guess-two", "guess-three", TEST_USER.password]) assert.ok(!everything.includes(secret), secret);

    clock.advanceSeconds(LOCKOUT_SECONDS);
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password)).status, 200);
  });

  it("does not forgive an address for one successful sign-in", async () => {
    await start();
    await passwordGrant("nobody", "guess-1");
    await passwordGrant("nobody", "guess-2");
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password)).status, 200);
    await passwordGrant("somebody", "guess-3");
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password)).body.error_description, LOCKED);
  });

  it("takes the address from the socket: X-Forwarded-For from an untrusted peer changes nothing", async () => {
    await start();
    for (const [i, spoofed] of ["198.51.100.1", "198.51.100.2", "198.51.100.3"].entries()) await passwordGrant("nobody", `guess-${i}`, spoofed);
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "198.51.100.9")).body.error_description, LOCKED);
    assert.equal(lockoutLines()[0]?.fields?.subject, "127.0.0.1");
  });

  it("behind a trusted proxy, locks the forwarded client's address only, and a name across addresses", async () => {
    await start({ trustedProxies: ["127.0.0.1"], loginMaxFailures: 4 });
    for (let i = 0; i < 3; i++) await passwordGrant("nobody", `guess-${i}`, "203.0.113.5");
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "203.0.113.5")).body.error_description, LOCKED);
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "203.0.113.6")).status, 200);
    assert.equal(lockoutLines()[0]?.fields?.subject, "203.0.113.5");

    // The per-name limit holds whatever address the guesses come from.
    for (const [i, from] of ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"].entries()) await passwordGrant(TEST_USER.name, `wrong-${i}`, from);
    assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password, "192.0.2.99")).body.error_description, LOCKED);
    const user = lockoutLines().find((l) => l.fields?.kind === "user");
    assert.equal(user?.fields?.subject, TEST_USER.name);
  });
});

describe("client address", () => {
  it("trusts no proxy and locks an address after 20 failures unless configured", () => {
    const defaults = parseServeConfig([], {});
    assert.equal(defaults.trustedProxies, undefined);
    assert.equal(defaults.loginMaxFailuresPerIp, 20);
    const configured = parseServeConfig(["--trusted-proxies", "10.0.0.1, ::1", "--login-max-failures-per-ip", "0"], {});
    assert.deepEqual(configured.trustedProxies, ["10.0.0.1", "::1"]);
    assert.equal(configured.loginMaxFailuresPerIp, 0);
    assert.throws(() => parseServeConfig(["--trusted-proxies", "10.0.0.0/8"], {}), /--trusted-proxies.*not an IP address/);
  });

  const request = (remoteAddress: string | undefined, forwardedFor?: string | string[]) => ({
    socket: { remoteAddress },
    headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor as string },
  });

  it("is the socket's peer, IPv4-mapped addresses unwrapped, whatever X-Forwarded-For says", () => {
    const resolve = clientAddressResolver([]);
    assert.equal(resolve(request("::ffff:192.0.2.7", "203.0.113.1")), "192.0.2.7");
    assert.equal(resolve(request("2001:db8::1")), "2001:db8::1");
    assert.equal(resolve(request(undefined)), undefined);
  });

  it("behind trusted proxies, is the right-most forwarded address that is not a proxy", () => {
    const resolve = clientAddressResolver(["10.0.0.1", "10.0.0.2"]);
    assert.equal(resolve(request("10.0.0.1", "203.0.113.1")), "203.0.113.1");
    // The client may prepend anything; only what the proxies appended counts.
    assert.equal(resolve(request("10.0.0.1", "1.1.1.1, 203.0.113.1, 10.0.0.2")), "203.0.113.1");
    assert.equal(resolve(request("::ffff:10.0.0.1", ["198.51.100.1", "203.0.113.2"])), "203.0.113.2");
    // Garbage in the header, or no header, leaves the proxy's own address.
    assert.equal(resolve(request("10.0.0.1", "not-an-address")), "10.0.0.1");
    assert.equal(resolve(request("10.0.0.1")), "10.0.0.1");
    // A peer that is not a trusted proxy is believed about nothing.
    assert.equal(resolve(request("192.0.2.50", "203.0.113.1")), "192.0.2.50");
  });
});
