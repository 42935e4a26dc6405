import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, pkcePair, signIn, submit } from "../support/browserless.js";
import { postJson, TOKEN_PATH } from "../support/oauth.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** Issue 43 §2: a registered client never gets a code without the user's Allow. */
const CALLBACK = "http://127.0.0.1:9999/callback";
const TOOLS = { uri: "https://tools.example.com/mcp", name: "Example tools", scopes: [{ name: "mcp:tools", description: "Use the example tools" }] };

describe("consent for registered clients", () => {
  let server: RunningServer;
  let client: { client_id: string; client_secret: string };
  let jar: CookieJar;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER], resources: [TOOLS] }, overrides: { clientRegistration: "open" } });
    const res = await postJson(`${server.url}/api/oauth/register`, {
      redirect_uris: [CALLBACK], client_name: "Agent <b>X</b>", client_uri: "https://agent.example.com", logo_uri: "https://agent.example.com/logo.png",
    });
    assert.equal(res.status, 201, res.text);
    client = res.body;
    ({ jar } = await signIn(server));
  });
  after(() => server.close());

  const url = (params: Record<string, string> = {}) => {
    const u = new URL(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: CALLBACK, scope: "openid email mcp:tools", ...params }));
    u.searchParams.append("resource", TOOLS.uri);
    return u.href;
  };
  const hidden = (html: string) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));

  it("attack: a signed-in user's browser sent to a registered client's authorize URL gets the consent page, not a code", async () => {
    const page = await browse(url(), jar);
    assert.equal(page.status, 200, page.headers.get("location") ?? "");
    const html = await page.text();
    // The page names the application (escaped), its site and logo, each scope and resource in words, and two buttons.
    assert.match(html, /Allow Agent &#60;b&#62;X&#60;\/b&#62;\?/);
    assert.match(html, /href="https:\/\/agent\.example\.com"/);
    assert.match(html, /<img class="app-logo" src="https:\/\/agent\.example\.com\/logo\.png" alt="">/);
    assert.match(html, /See your email address/);
    assert.match(html, /Use the example tools/);
    assert.match(html, /Example tools <code>https:\/\/tools\.example\.com\/mcp<\/code>/);
    assert.match(html, /<button type="submit" name="decision" value="allow" class="primary">Allow<\/button>/);
    assert.match(html, /<button type="submit" name="decision" value="deny">Deny<\/button>/);
    assert.doesNotMatch(html, /<script/);
    // The login page's headers: no framing, no script.
    assert.match(page.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
    assert.equal(page.headers.get("x-frame-options"), "DENY");
  });

  it("prompt=none gets consent_required, and a forged decision without the page's token does nothing", async () => {
    const none = await browse(url({ prompt: "none" }), jar);
    assert.equal(none.status, 303);
    assert.equal(new URL(none.headers.get("location")!).searchParams.get("error"), "consent_required");
    const page = await browse(url(), jar);
    const fields = hidden(await page.text());
    const forged = await submit(`${server.url}/login/oauth/consent`, { request: fields.request!, decision: "allow" }, jar);
    assert.equal(forged.status, 403);
  });

  it("Deny returns access_denied; Allow returns a code that redeems", async () => {
    const denied = await submit(`${server.url}/login/oauth/consent`, { ...hidden(await (await browse(url(), jar)).text()), decision: "deny" }, jar);
    assert.equal(denied.status, 303);
    const deniedAt = new URL(denied.headers.get("location")!);
    assert.equal(deniedAt.searchParams.get("error"), "access_denied");
    assert.equal(deniedAt.searchParams.get("state"), "state-123");
    const fields = hidden(await (await browse(url(), jar)).text());
    const allowed = await submit(`${server.url}/login/oauth/consent`, { ...fields, decision: "allow" }, jar);
    assert.equal(allowed.status, 303);
    const code = new URL(allowed.headers.get("location")!).searchParams.get("code")!;
    const tokens = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, client_id: client.client_id, client_secret: client.client_secret });
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal(tokens.body.scope, "openid email mcp:tools");
    // The same page cannot be answered twice.
    const again = await submit(`${server.url}/login/oauth/consent`, { ...fields, decision: "allow" }, jar);
    assert.equal(again.status, 400);
  });

  it("remembers Allow: the same or fewer skip the page, even for prompt=none; more, or prompt=consent, ask again", async () => {
    const codeOf = (res: Response) => (res.status === 303 ? new URL(res.headers.get("location")!).searchParams.get("code") : null);
    assert.ok(codeOf(await browse(url(), jar)), "the same request");
    assert.ok(codeOf(await browse(url({ scope: "openid" }), jar)), "fewer scopes");
    assert.ok(codeOf(await browse(url({ prompt: "none" }), jar)), "prompt=none, remembered");
    for (const more of [url({ scope: "openid email profile mcp:tools" }), url({ prompt: "consent" })]) {
      const page = await browse(more, jar);
      assert.equal(page.status, 200, more);
      assert.match(await page.text(), /Allow Agent/);
    }
  });

  it("asks after a fresh sign-in for more than was allowed, and admin-made applications still skip it", async () => {
    const fresh = new CookieJar();
    const { verifier: _v } = pkcePair();
    const login = await browse(url({ scope: "openid email phone mcp:tools" }), fresh);
    const afterLogin = await submit(`${server.url}/login`, { ...loginFormFields(await login.text()), username: TEST_USER.name, password: TEST_USER.password }, fresh);
    assert.equal(afterLogin.status, 200);
    assert.match(await afterLogin.text(), /Allow Agent/);
    assert.ok(fresh.get("identity_session"), "the sign-in's session cookie is set with the consent page");
    const trusted = await browse(authorizeUrl(server.url), jar);
    assert.equal(trusted.status, 303);
    assert.ok(new URL(trusted.headers.get("location")!).searchParams.get("code"));
  });
});
