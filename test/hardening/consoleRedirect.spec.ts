import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar } from "../support/browserless.js";
import { consoleAuthorization, consoleSignIn } from "../support/consoleSignIn.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 41, §2: the console's redirect URI is `<issuer>/admin/` and nothing
 * else. With the default loopback issuer, RFC 8252's "any loopback port"
 * rule must not reach it, or an admin's code (worth `identity:admin`) could
 * be sent to, and redeemed from, any program listening on another port.
 */
describe("the console's redirect URI is exact", () => {
  const ROOT = { name: "root", password: "pw-root-123456", displayName: "Root", isAdmin: true };
  let server: RunningServer;
  /** The console's redirect URI on another loopback port: where a local program would wait for the code. */
  let elsewhere: string;
  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER, ROOT] } });
    const own = new URL(server.domain.console.redirectUri);
    assert.equal(own.hostname, "127.0.0.1", "the default issuer is a loopback address");
    const other = new URL(own);
    other.port = String(Number(own.port) === 65535 ? 1024 : Number(own.port) + 1);
    elsewhere = other.href;
  });
  after(() => server.close());

  it("refuses the console's redirect_uri on another loopback port (or none) with an error page, before any sign-in", async () => {
    const { params } = consoleAuthorization(server);
    const noPort = new URL(elsewhere);
    noPort.port = "";
    for (const redirectUri of [elsewhere, noPort.href]) {
      const res = await browse(authorizeUrl(server.url, { ...params, redirect_uri: redirectUri }), new CookieJar());
      assert.equal(res.status, 400, redirectUri);
      assert.equal(res.headers.get("location"), null);
      assert.match(await res.text(), /Sign-in failed/);
    }
  });

  it("still signs an admin in to the console at its own redirect URI", async () => {
    const tokens = await consoleSignIn(server, ROOT);
    assert.match(tokens.scope ?? "", /identity:admin/);
  });

  it("refuses the console's post_logout_redirect_uri on another loopback port, and takes its own", async () => {
    const { clientId, redirectUri } = server.domain.console;
    const logout = (target: string) =>
      fetch(`${server.url}/api/logout?${new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: target })}`, { redirect: "manual" });
    const refused = await logout(elsewhere);
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as { error: string }).error, "invalid_request");
    assert.equal((await logout(redirectUri)).status, 200, "its own URI gets the confirmation page");
  });

  it("leaves the loopback rule of other applications as it was (RFC 8252 §7.3)", async () => {
    const res = await browse(authorizeUrl(server.url, { redirect_uri: "http://127.0.0.1:43210/callback" }), new CookieJar());
    assert.equal(res.status, 200);
  });
});
