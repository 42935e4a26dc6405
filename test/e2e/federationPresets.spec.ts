import assert from "node:assert/strict";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { sendJsonBody, type UpstreamRequest } from "../support/fakeUpstream.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const CLIENT = { clientId: "Iv1.preset-client", clientSecret: "preset secret+/=" };
const CODE = "preset-code-1";

/** A local server answering as a real provider documents; `routes` by method and path. */
async function startFake(routes: Record<string, (req: IncomingMessage, res: ServerResponse, body: string) => void>) {
  const requests: UpstreamRequest[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://fake").pathname;
      requests.push({ method: req.method ?? "", path, headers: req.headers, body });
      const route = routes[`${req.method} ${path}`];
      if (route) route(req, res, body);
      else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/**
 * GitHub as docs.github.com describes it: the token endpoint answers a form
 * unless asked for JSON, and an error with HTTP 200; the REST API wants a
 * User-Agent; /user has the public email or null; /user/emails lists them.
 */
function githubRoutes(state: { publicEmail: string | null; tokens: string[] }) {
  const authorized = (req: IncomingMessage) => {
    const token = /^(?:Bearer|token) (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    return token !== undefined && state.tokens.includes(token) && Boolean(req.headers["user-agent"]);
  };
  return {
    "POST /login/oauth/access_token": (req: IncomingMessage, res: ServerResponse, body: string) => {
      const form = new URLSearchParams(body);
      if (form.get("client_secret") !== CLIENT.clientSecret || form.get("code") !== CODE) {
        return sendJsonBody(res, 200, { error: "bad_verification_code", error_description: "The code passed is incorrect or expired." });
      }
      const accessToken = `gho_${randomBytes(12).toString("hex")}`;
      state.tokens.push(accessToken);
      const answer = { access_token: accessToken, scope: "read:user,user:email", token_type: "bearer" };
      if (/application\/json/.test(req.headers.accept ?? "")) return sendJsonBody(res, 200, answer);
      res.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }).end(new URLSearchParams(answer).toString());
    },
    "GET /api/v3/user": (req: IncomingMessage, res: ServerResponse) => {
      if (!authorized(req)) return sendJsonBody(res, 401, { message: "Requires authentication" });
      sendJsonBody(res, 200, {
        login: "octocat",
        id: 583231,
        node_id: "MDQ6VXNlcjU4MzIzMQ==",
        avatar_url: "https://avatars.githubusercontent.com/u/583231?v=4",
        type: "User",
        name: "The Octocat",
        email: state.publicEmail,
      });
    },
    "GET /api/v3/user/emails": (req: IncomingMessage, res: ServerResponse) => {
      if (!authorized(req)) return sendJsonBody(res, 401, { message: "Requires authentication" });
      sendJsonBody(res, 200, [
        { email: "old@octo.example", verified: true, primary: false, visibility: null },
        { email: "unverified@octo.example", verified: false, primary: false, visibility: null },
        { email: "octocat@octo.example", verified: true, primary: true, visibility: "private" },
      ]);
    },
  };
}

/** Google as developers.google.com describes it: a JSON token answer and the OpenID Connect UserInfo. */
function googleRoutes(state: { tokens: string[]; emailVerified: boolean }) {
  return {
    "POST /token": (_req: IncomingMessage, res: ServerResponse) => {
      const accessToken = `ya29.${randomBytes(12).toString("hex")}`;
      state.tokens.push(accessToken);
      sendJsonBody(res, 200, { access_token: accessToken, expires_in: 3599, scope: "openid https://www.googleapis.com/auth/userinfo.email", token_type: "Bearer", id_token: "eyJ.not.read" });
    },
    "GET /v1/userinfo": (req: IncomingMessage, res: ServerResponse) => {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      if (!token || !state.tokens.includes(token)) return sendJsonBody(res, 401, { error: "invalid_token" });
      sendJsonBody(res, 200, {
        sub: "110169484474386276334",
        name: "Grace Google",
        given_name: "Grace",
        family_name: "Google",
        picture: "https://lh3.googleusercontent.com/a/grace",
        email: "grace@gmail.example",
        email_verified: state.emailVerified,
      });
    },
  };
}

function decodeBasic(header: string | undefined): string[] {
  const decoded = Buffer.from(/^Basic (.+)$/.exec(header ?? "")![1]!, "base64").toString("utf8");
  return decoded.split(":").map((s) => decodeURIComponent(s.replace(/\+/g, " ")));
}

describe("GitHub and Google presets", () => {
  const github = { publicEmail: null as string | null, tokens: [] as string[] };
  const google = { tokens: [] as string[], emailVerified: true };
  let gh: Awaited<ReturnType<typeof startFake>>;
  let gg: Awaited<ReturnType<typeof startFake>>;
  let server: RunningServer;

  before(async () => {
    gh = await startFake(githubRoutes(github));
    gg = await startFake(googleRoutes(google));
    server = await startTestServer({
      config: {
        applications: [{ ...TEST_APP, providers: ["github", "ghe", "google", "google-local"] }],
        users: [TEST_USER],
        providers: [
          // Only what an operator gives: the preset fills in the rest.
          { name: "github", type: "GitHub", ...CLIENT },
          { name: "google", type: "Google", ...CLIENT },
          // GitHub Enterprise style: the URL fields point the preset at another host.
          {
            name: "ghe",
            type: "GitHub",
            ...CLIENT,
            authUrl: `${gh.origin}/login/oauth/authorize`,
            tokenUrl: `${gh.origin}/login/oauth/access_token`,
            userInfoUrl: `${gh.origin}/api/v3/user`,
            emailsUrl: `${gh.origin}/api/v3/user/emails`,
          },
          { name: "google-local", type: "Google", ...CLIENT, tokenUrl: `${gg.origin}/token`, userInfoUrl: `${gg.origin}/v1/userinfo`, trustEmail: true },
        ],
      },
    });
  });
  after(async () => {
    await server?.close();
    await gh?.close();
    await gg?.close();
  });
  beforeEach(() => {
    gh.requests.length = 0;
    gg.requests.length = 0;
  });

  async function pressButton(provider: string, jar = new CookieJar()) {
    const page = await browse(authorizeUrl(server.url, { scope: "openid profile email" }), jar);
    const html = await page.text();
    const res = await submit(`${server.url}/login/oauth/provider/${provider}`, loginFormFields(html), jar);
    assert.equal(res.status, 303);
    const authUrl = new URL(res.headers.get("location")!);
    return { jar, html, authUrl, state: authUrl.searchParams.get("state")! };
  }

  async function signIn(provider: string) {
    const { jar, state } = await pressButton(provider);
    const res = await browse(`${server.url}/callback?${new URLSearchParams({ code: CODE, state })}`, jar);
    assert.equal(res.status, 303, await res.text());
    const location = new URL(res.headers.get("location")!);
    assert.ok(location.searchParams.get("code"), "the client gets a code");
  }

  const linkedUser = async (provider: string, id: string) => {
    const link = await server.domain.store.federatedIdentities.find({ provider, externalIdType: "sub", externalId: id });
    assert.ok(link, "linked by the provider's id");
    return (await server.domain.store.users.findById(link.userId))!;
  };

  it("fill in the URLs, scope and favicon when the operator gives only client id and secret", async () => {
    const { authUrl, html } = await pressButton("github");
    assert.equal(`${authUrl.origin}${authUrl.pathname}`, "https://github.com/login/oauth/authorize");
    assert.equal(authUrl.searchParams.get("scope"), "read:user user:email");
    assert.equal(authUrl.searchParams.get("client_id"), CLIENT.clientId);
    assert.ok(html.includes("https://github.com/favicon.ico"));
    assert.ok(html.includes("https://www.google.com/favicon.ico"));
    const google = (await pressButton("google")).authUrl;
    assert.equal(`${google.origin}${google.pathname}`, "https://accounts.google.com/o/oauth2/v2/auth");
    assert.equal(google.searchParams.get("scope"), "openid profile email");
    // What is stored is what the operator gave; GetProvider shows no preset values.
    const stored = (await server.domain.store.providers.findByName("github"))!;
    assert.deepEqual([stored.authUrl, stored.tokenUrl, stored.userMapping], ["", "", {}]);
  });

  it("GitHub: Accept: application/json and credentials in the form at the token URL; the primary verified email from /user/emails", async () => {
    github.publicEmail = null;
    await signIn("ghe");
    const [token, user, emails, ...more] = gh.requests;
    assert.equal(more.length, 0);
    assert.equal(token!.path, "/login/oauth/access_token");
    assert.match(token!.headers.accept!, /^application\/json/);
    assert.equal(token!.headers.authorization, undefined);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(token!.body)), {
      code: CODE,
      grant_type: "authorization_code",
      redirect_uri: `${server.issuer}/callback`,
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
    });
    for (const call of [user!, emails!]) {
      assert.equal(call.headers.authorization, `Bearer ${github.tokens.at(-1)}`);
      assert.ok(call.headers["user-agent"]);
    }
    assert.deepEqual([user!.path, emails!.path], ["/api/v3/user", "/api/v3/user/emails"]);
    const octocat = await linkedUser("ghe", "583231");
    assert.deepEqual(
      [octocat.name, octocat.displayName, octocat.email, octocat.avatar],
      ["octocat", "The Octocat", "octocat@octo.example", "https://avatars.githubusercontent.com/u/583231?v=4"],
    );
  });

  it("GitHub: a public email needs no second call", async () => {
    github.publicEmail = "public@octo.example";
    await signIn("ghe");
    assert.deepEqual(gh.requests.map((r) => r.path), ["/login/oauth/access_token", "/api/v3/user"]);
  });

  it("Google: Basic at the token URL, Bearer at UserInfo, the email as user name, email_verified honoured", async () => {
    google.emailVerified = false;
    await signIn("google-local");
    const [token, userinfo] = gg.requests;
    assert.deepEqual(decodeBasic(token!.headers.authorization), [CLIENT.clientId, CLIENT.clientSecret]);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(token!.body)), { code: CODE, grant_type: "authorization_code", redirect_uri: `${server.issuer}/callback` });
    assert.equal(userinfo!.headers.authorization, `Bearer ${google.tokens.at(-1)}`);
    const grace = await linkedUser("google-local", "110169484474386276334");
    assert.deepEqual(
      [grace.name, grace.displayName, grace.email, grace.emailVerified, grace.avatar],
      ["grace@gmail.example", "Grace Google", "grace@gmail.example", false, "https://lh3.googleusercontent.com/a/grace"],
    );
  });

  it("need only client id and secret; Custom still needs every URL", async () => {
    const admin = server.domain.providerAdmin;
    await assert.rejects(admin.create({ name: "half", type: "GitHub", clientId: "x" }), /clientSecret: is required for type GitHub/);
    await assert.rejects(admin.update({ name: "github", type: "Custom" }), /authUrl: is required for type Custom/);
  });
});
