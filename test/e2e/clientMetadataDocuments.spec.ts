import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { METADATA_DOCUMENT_BOUNDS } from "../../src/accounts/clientMetadataDocuments.js";
import { authorizeUrl, browse, CookieJar, pkcePair, signIn, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { startDocumentServer, type DocumentServer } from "../support/documentServer.js";
import { getJson, TOKEN_PATH } from "../support/oauth.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** Issue 43 §4: a client named by the https URL of its metadata document. */
const CALLBACK = "http://127.0.0.1:9999/callback";
const TOOLS = { uri: "https://tools.example.com/mcp", name: "Example tools", scopes: [{ name: "mcp:tools", description: "Use the example tools" }] };
const CONFIG = { applications: [TEST_APP], users: [TEST_USER], resources: [TOOLS] };

const hidden = (html: string) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));

/** A document for `url` with the client's redirect URI; `extra` adds or replaces fields. */
const documentFor = (url: string, extra: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: "Agent by URL",
  redirect_uris: [CALLBACK],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...extra,
});

describe("client ID metadata documents", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  let docs: DocumentServer;
  let jar: CookieJar;

  /** Serve a document at `path` and return its URL. */
  const serve = (path: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
    const url = docs.origin + path;
    docs.documents.set(path, { body: documentFor(url, extra), headers });
    return url;
  };
  const authorize = (clientId: string, params: Record<string, string | undefined> = {}) => {
    const u = new URL(authorizeUrl(server.url, { client_id: clientId, redirect_uri: CALLBACK, scope: "openid mcp:tools", ...params }));
    u.searchParams.append("resource", TOOLS.uri);
    return u.href;
  };
  /** Through the consent page to a code, with PKCE. */
  const code = async (clientId: string) => {
    const pkce = pkcePair();
    const page = await browse(authorize(clientId, { code_challenge: pkce.challenge, code_challenge_method: "S256" }), jar);
    assert.equal(page.status, 200, "the consent page, never a code at once");
    const html = await page.text();
    assert.ok(html.includes(`Client ID: <code>${clientId}</code>`), "the page shows the URL, not only the name the document claims");
    const allowed = await submit(`${server.url}/login/oauth/consent`, { ...hidden(html), decision: "allow" }, jar);
    assert.equal(allowed.status, 303);
    return { code: new URL(allowed.headers.get("location")!).searchParams.get("code")!, verifier: pkce.verifier };
  };

  before(async () => {
    docs = await startDocumentServer();
    server = await startTestServer({ config: CONFIG, clock, overrides: { clientRegistration: "open", allowInsecureClientMetadata: true } });
    ({ jar } = await signIn(server));
  });
  after(async () => {
    await server.close();
    await docs.close();
  });

  it("advertises client_id_metadata_document_supported under open registration", async () => {
    const metadata = await getJson(`${server.url}/.well-known/oauth-authorization-server`);
    assert.equal(metadata.body.client_id_metadata_document_supported, true);
  });

  it("signs a document's client in with consent and PKCE, fetching the document once per cache period, never per request", async () => {
    const url = serve("/agent.json", {}, { "cache-control": "max-age=900" });
    const first = await code(url);
    const tokens = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", code: first.code, redirect_uri: CALLBACK, client_id: url, code_verifier: first.verifier });
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal(tokens.body.scope, "openid mcp:tools");
    const claims = JSON.parse(Buffer.from(tokens.body.access_token.split(".")[1], "base64url").toString());
    assert.equal(claims.aud, TOOLS.uri);
    assert.equal(claims.azp ?? claims.client_id, url);
    // A second sign-in with the same scopes skips the page; refreshes follow.
    const again = await browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar);
    assert.equal(again.status, 303);
    let refreshToken = tokens.body.refresh_token as string;
    for (let i = 0; i < 3; i++) {
      const refreshed = await postForm(server.url + TOKEN_PATH, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: url });
      assert.equal(refreshed.status, 200, refreshed.text);
      refreshToken = refreshed.body.refresh_token;
    }
    assert.equal(docs.fetches("/agent.json"), 1, "one fetch for authorize, consent, code exchange and refreshes");
    // Within max-age: still none. After it: one more, at the next use.
    clock.advanceSeconds(800);
    assert.equal((await postForm(server.url + TOKEN_PATH, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: url })).status, 200);
    assert.equal(docs.fetches("/agent.json"), 1);
    clock.advanceSeconds(200);
    const later = await postForm(server.url + TOKEN_PATH, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: url });
    assert.equal(later.status, 400, "the refresh token was used above");
    assert.equal(docs.fetches("/agent.json"), 2);
  });

  it("holds max-age to the bounds, and changes to the document take effect when fetched again", async () => {
    const url = serve("/short.json", {}, { "cache-control": "max-age=5" });
    await code(url);
    assert.equal(docs.fetches("/short.json"), 1);
    // Five seconds asked, the minimum kept.
    clock.advanceSeconds(METADATA_DOCUMENT_BOUNDS.minSeconds - 10);
    assert.equal((await browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar)).status, 303);
    assert.equal(docs.fetches("/short.json"), 1);
    // The client moves its redirect URI: the old one is refused once the document is read again.
    docs.documents.set("/short.json", { body: documentFor(url, { redirect_uris: ["http://127.0.0.1:9999/moved"] }) });
    clock.advanceSeconds(20);
    const moved = await browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar);
    assert.equal(moved.status, 400, `${moved.headers.get("location")} ${docs.fetches("/short.json")}`);
    assert.match(await moved.text(), /redirect_uri is not registered/i);
    assert.equal(docs.fetches("/short.json"), 2);
  });

  it("keeps what a document asks of the service (PAR, DPoP, back-channel logout), and lets it go when the document does", async () => {
    const url = serve("/assured.json", {
      require_pushed_authorization_requests: true, dpop_bound_access_tokens: true,
      backchannel_logout_uri: "https://agent.example.com/bc", backchannel_logout_session_required: true,
    }, { "cache-control": "max-age=5" });
    const plain = await browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar);
    assert.equal(plain.status, 303, "refused back at its redirect URI: it asked for PAR");
    assert.match(new URL(plain.headers.get("location")!).searchParams.get("error_description") ?? "", /PAR/);
    const app = (await server.store.applications.findByClientId(url, true))!;
    assert.deepEqual(
      [app.requirePushedAuthorizationRequests, app.dpopBoundAccessTokens, app.backchannelLogoutUri, app.backchannelLogoutSessionRequired, app.allowPrivateBackchannelLogoutUri],
      [true, true, "https://agent.example.com/bc", true, false],
    );
    docs.documents.set("/assured.json", { body: documentFor(url) });
    clock.advanceSeconds(METADATA_DOCUMENT_BOUNDS.minSeconds + 10);
    assert.equal((await browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar)).status, 200, "the consent page");
    const after = (await server.store.applications.findByClientId(url, true))!;
    assert.deepEqual([after.requirePushedAuthorizationRequests, after.dpopBoundAccessTokens ?? false, after.backchannelLogoutUri], [false, false, ""]);
  });

  it("fetches a new document once for many parallel requests", async () => {
    const url = serve("/parallel.json");
    const pages = await Promise.all(Array.from({ length: 12 }, () => browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar)));
    assert.deepEqual([...new Set(pages.map((p) => p.status))], [200]);
    assert.equal(docs.fetches("/parallel.json"), 1);
  });

  it("needs PKCE S256 of a document's client, which is public", async () => {
    const url = serve("/nopkce.json");
    const page = await browse(authorize(url), jar);
    assert.equal(page.status, 303);
    const error = new URL(page.headers.get("location")!);
    assert.equal(error.searchParams.get("error"), "invalid_request");
    assert.match(error.searchParams.get("error_description") ?? "", /PKCE|code_challenge/);
  });

  it("lets a code request with PKCE leave state out (RFC 9700 §2.1.1), as MCP clients do; without PKCE state is required", async () => {
    const url = serve("/stateless.json");
    const page = await browse(authorize(url, { state: undefined, code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar);
    assert.equal(page.status, 200);
    const allowed = await submit(`${server.url}/login/oauth/consent`, { ...hidden(await page.text()), decision: "allow" }, jar);
    const location = new URL(allowed.headers.get("location")!);
    assert.ok(location.searchParams.get("code"));
    assert.equal(location.searchParams.has("state"), false);
    const confidential = await browse(authorizeUrl(server.url, { state: undefined }), jar);
    assert.equal(confidential.status, 303);
    const error = new URL(confidential.headers.get("location")!).searchParams;
    assert.equal(error.get("error"), "invalid_request");
    assert.match(error.get("error_description")!, /missing parameter: state/);
  });

  it("refuses documents that break the rules, shown to the user and never redirected, and does not fetch them again at once", async () => {
    const cases: [string, Record<string, unknown> | string, RegExp, Record<string, string>?, number?][] = [
      ["/other-id.json", { client_id: "https://elsewhere.example/agent.json" }, /is not the URL it was fetched from/],
      ["/secret.json", { client_secret: "s3cret" }, /must not hold a client_secret/],
      ["/basic.json", { token_endpoint_auth_method: "client_secret_basic" }, /must be none/],
      ["/password.json", { grant_types: ["authorization_code", "password"] }, /grant type password is not open/],
      ["/implicit.json", { grant_types: ["implicit"] }, /grant type implicit is not open/],
      ["/cc.json", { grant_types: ["client_credentials"] }, /grant type client_credentials is not open/],
      ["/admin.json", { scope: "openid identity:admin" }, /identity:admin is never granted/],
      ["/wildcard.json", { redirect_uris: ["https://*.example.com/cb"] }, /wildcard/],
      ["/fragment.json", { redirect_uris: ["https://agent.example.com/cb#x"] }, /fragment/],
      ["/private-logout.json", { backchannel_logout_uri: "https://10.1.2.3/bc" }, /backchannel_logout_uri targets a private or link-local address/],
      ["/large.json", { client_name: "x".repeat(400), contacts: Array.from({ length: 15 }, (_, i) => `${"a".repeat(300)}${i}@example.com`) }, /more than 5120 bytes/],
      ["/redirect.json", "", /redirect \(HTTP 302\), which is not followed/, { location: "https://elsewhere.example/agent.json" }, 302],
      ["/not-json.json", "<html></html>", /something other than a JSON object/],
    ];
    for (const [path, body, message, headers, status] of cases) {
      const url = docs.origin + path;
      docs.documents.set(path, { body: typeof body === "string" ? body : documentFor(url, body), headers, status });
      for (let i = 0; i < 2; i++) {
        const page = await browse(authorize(url, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar);
        assert.equal(page.status, 400, path);
        assert.equal(page.headers.get("location"), null, path);
        assert.match(await page.text(), message, path);
      }
      assert.equal(docs.fetches(path), 1, `${path}: a refusal is remembered for the failure period`);
    }
  });

  it("attack: the token endpoint never fetches a document it has not seen at the authorize endpoint", async () => {
    const url = serve("/unseen.json");
    const res = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", code: "made-up", redirect_uri: CALLBACK, client_id: url, code_verifier: "x".repeat(43) });
    assert.equal(res.status, 401);
    assert.equal(res.body.error, "invalid_client");
    assert.equal(docs.fetches("/unseen.json"), 0);
  });

  it("refuses client_id URLs the draft forbids without fetching", async () => {
    for (const clientId of [docs.origin + "/", docs.origin + "/a/../agent.json", docs.origin.replace("http:", "ftp:") + "/agent.json", `http://user:pw@127.0.0.1/x.json`]) {
      const page = await browse(authorize(clientId, { code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), jar);
      assert.equal(page.status, 400, clientId);
      assert.equal(page.headers.get("location"), null);
    }
  });
});

describe("client ID metadata documents: attacks on the fetch", () => {
  let server: RunningServer;
  let docs: DocumentServer;
  before(async () => {
    docs = await startDocumentServer();
    // No --allow-insecure-client-metadata: as in production.
    server = await startTestServer({ config: CONFIG, overrides: { clientRegistration: "open" } });
  });
  after(async () => {
    await server.close();
    await docs.close();
  });

  it("attack: a metadata document aimed at a private or loopback address is never fetched", async () => {
    docs.documents.set("/agent.json", { body: documentFor(`${docs.origin.replace("http:", "https:")}/agent.json`) });
    const port = new URL(docs.origin).port;
    const targets = [
      `https://127.0.0.1:${port}/agent.json`,
      `https://localhost:${port}/agent.json`,
      "https://10.0.0.1/agent.json",
      "https://169.254.169.254/latest/meta-data.json",
      "https://[::1]/agent.json",
      "https://[::ffff:7f00:1]/agent.json",
      "https://192.168.1.1/agent.json",
    ];
    for (const clientId of targets) {
      const page = await browse(authorizeUrl(server.url, { client_id: clientId, redirect_uri: CALLBACK, code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), new CookieJar());
      const html = await page.text();
      assert.equal(page.status, 400, clientId);
      assert.match(html, /targets a loopback, private or link-local address/, `${clientId}: ${/class="error"[^>]*>([^<]*)/.exec(html)?.[1]}`);
    }
    // http is refused outright, loopback or not.
    const plain = await browse(authorizeUrl(server.url, { client_id: `${docs.origin}/agent.json`, redirect_uri: CALLBACK }), new CookieJar());
    assert.equal(plain.status, 400);
    assert.equal(docs.fetches("/agent.json"), 0);
  });
});

describe("client ID metadata documents: flooding", () => {
  let server: RunningServer;
  let docs: DocumentServer;
  before(async () => {
    docs = await startDocumentServer();
    server = await startTestServer({ config: CONFIG, overrides: { clientRegistration: "open", allowInsecureClientMetadata: true, registrationMaxPerHour: 3 } });
  });
  after(async () => {
    await server.close();
    await docs.close();
  });

  it("attack: new clients by metadata document count against the address's registration budget, in parallel", async () => {
    const urls = Array.from({ length: 10 }, (_, i) => {
      const path = `/flood-${i}.json`;
      docs.documents.set(path, { body: documentFor(docs.origin + path) });
      return docs.origin + path;
    });
    const pages = await Promise.all(
      urls.map((url) => browse(authorizeUrl(server.url, { client_id: url, redirect_uri: CALLBACK, code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), new CookieJar())),
    );
    const statuses = pages.map((p) => p.status).sort();
    // Three reach the login page; the rest are told to wait, and their documents are not fetched.
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    assert.equal(urls.reduce((n, url) => n + docs.fetches(new URL(url).pathname), 0), 3);
  });
});
