import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { useChromium } from "../support/chromium.js";
import { startTestServer, TEST_USER } from "../support/server.js";
import { startSpaServer, type SpaServer } from "../support/spaServer.js";

const CLIENT_ID = "spa-client";

interface Outcome {
  ok: boolean;
  value?: any;
  error?: string;
}

/**
 * A single-page app (test/e2e/spa/app.ts) on an origin other than the
 * service's, in Debian's headless Chromium: the browser itself enforces CORS.
 */
describe("a single-page app on another origin, in headless Chromium (CORS)", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let server: RunningServer;
  let allowedSpa: SpaServer;
  let unlistedSpa: SpaServer;
  let console: string[];

  before(async () => {
    const issuer = () => server.url;
    allowedSpa = await startSpaServer(CLIENT_ID, issuer);
    unlistedSpa = await startSpaServer(CLIENT_ID, issuer);
    // A public client: no secret is used; both pages may receive its codes, only one origin may read answers.
    const spa = {
      name: "spa",
      clientId: CLIENT_ID,
      redirectUris: [allowedSpa.redirectUri, unlistedSpa.redirectUri],
      allowedOrigins: [allowedSpa.origin],
    };
    server = await startTestServer({ config: { applications: [spa], users: [TEST_USER] } });
  });
  after(async () => {
    await server?.close();
    await allowedSpa?.close();
    await unlistedSpa?.close();
  });

  beforeEach(() => {
    console = [];
    chromium.page.on("console", (message) => console.push(message.text()));
  });

  /** Open the app, sign in on the service's login page, and wait for the app's outcome of each step. */
  async function signInThrough(spa: SpaServer): Promise<Record<string, Outcome>> {
    const { page } = chromium;
    await page.goto(`${spa.origin}/`);
    await page.waitForURL((url) => url.href.startsWith(server.url));
    await page.getByLabel("Username").fill(TEST_USER.name);
    await page.getByLabel("Password").fill(TEST_USER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((url) => url.href.startsWith(spa.redirectUri));
    const result = page.locator("#result");
    await result.filter({ hasText: /./ }).waitFor();
    return JSON.parse((await result.textContent())!);
  }

  it("signs in with code + PKCE from an allowed origin, exchanges the code with fetch, reads userinfo and calls RPCs", async () => {
    assert.notEqual(new URL(allowedSpa.origin).port, new URL(server.url).port, "another origin");
    const outcome = await signInThrough(allowedSpa);
    assert.deepEqual(
      Object.fromEntries(Object.entries(outcome).map(([step, o]) => [step, o.ok ? "ok" : o.error])),
      { token: "ok", userinfo: "ok", restAccount: "ok", sessionAccount: "TypeError: Failed to fetch", account: "ok", jwks: "ok" },
      JSON.stringify(outcome),
    );
    assert.equal(outcome.token!.value.status, 200);
    assert.ok(outcome.token!.value.fields.includes("access_token"));
    assert.ok(outcome.token!.value.fields.includes("id_token"));
    assert.equal(outcome.userinfo!.value.status, 200);
    assert.equal(outcome.userinfo!.value.body.preferred_username, TEST_USER.name);
    assert.ok(outcome.userinfo!.value.requestId, "an exposed response header is readable");
    assert.deepEqual(outcome.restAccount!.value, { status: 200, answer: "ok", name: TEST_USER.name }, "REST get-account");
    assert.equal(outcome.account!.value.name, TEST_USER.name, "GetAccount over Connect");
    assert.ok(outcome.jwks!.value.keys >= 1, "GetJwks over gRPC-Web");
    // Only the session-cookie read is refused, for want of Access-Control-Allow-Credentials.
    const refused = console.filter((m) => /CORS/.test(m));
    assert.equal(refused.length, 1, refused.join("\n"));
    assert.match(refused[0]!, /\/api\/get-account' from origin '.*' has been blocked by CORS policy.*Access-Control-Allow-Credentials/);
  });

  it("is blocked by the browser on an origin no application lists", async () => {
    const outcome = await signInThrough(unlistedSpa);
    for (const step of ["token", "userinfo", "restAccount", "sessionAccount", "account", "jwks"]) {
      assert.equal(outcome[step]!.ok, false, `${step}: ${JSON.stringify(outcome[step])}`);
      assert.match(outcome[step]!.error!, /Failed to fetch/, step);
    }
    const blocked = (path: string) => console.find((m) => m.includes(`${server.url}${path}' from origin '${unlistedSpa.origin}' has been blocked by CORS policy`));
    // The form POST is a "simple" request: sent (the code is spent), but its answer is kept from the script.
    assert.match(blocked("/api/login/oauth/access_token") ?? console.join("\n"), /No 'Access-Control-Allow-Origin' header/);
    // The rest are preflighted, and the preflight fails: they are never sent.
    for (const path of ["/api/userinfo", "/api/get-account", "/identity.v1.IntrospectionService/GetAccount", "/identity.v1.DiscoveryService/GetJwks"]) {
      assert.match(blocked(path) ?? console.join("\n"), /Response to preflight request doesn't pass access control check/, path);
    }
  });
});
