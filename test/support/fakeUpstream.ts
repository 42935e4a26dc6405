import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash, randomBytes } from "node:crypto";

/** One request the fake provider received. */
export interface UpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How one endpoint answers (`body`: the request's, already read); the default behaviours follow the spec. */
export type Behaviour = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** One endpoint of a fake provider, with the request body already read. */
export type Route = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

export const FAKE_CLIENT = { clientId: "ours at fake", clientSecret: "fake secret: with space+plus/and=colon" };

/** What the fake's UserInfo URL returns for a token it issued, unless a test says otherwise. */
export const FAKE_PROFILE = {
  sub: "fake-user-1",
  name: "Carol Upstream",
  preferred_username: "carol",
  email: "carol@upstream.example",
  picture: "https://upstream.example/carol.png",
};

export function sendJsonBody(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
  res.end(payload);
}

/** Whether a PKCE code_verifier is the one behind the S256 code_challenge of an authorize request (RFC 7636 §4.6). */
export function pkceHolds(authorization: URLSearchParams | undefined, verifier: string | null): boolean {
  if (!authorization || !verifier || authorization.get("code_challenge_method") !== "S256") return false;
  return createHash("sha256").update(verifier).digest("base64url") === authorization.get("code_challenge");
}

/** RFC 6749 §2.3.1 Basic credentials as a provider reads them: [client_id, client_secret], or undefined. */
export function decodeBasic(header: string | undefined): [string, string] | undefined {
  const encoded = /^Basic (.+)$/.exec(header ?? "")?.[1];
  if (!encoded) return undefined;
  const [id, secret] = Buffer.from(encoded, "base64").toString("utf8").split(":").map((s) => decodeURIComponent(s.replace(/\+/g, " ")));
  return secret === undefined ? undefined : [id!, secret];
}

/** A provider in a plain node:http server, with an authorize page that approves at once. */
export interface FakeProvider {
  origin: string;
  /** Every request, oldest first (the authorize page's included). */
  requests: UpstreamRequest[];
  /** The query of each visit to the authorize page, oldest first. */
  authorizations: URLSearchParams[];
  /** The authorize request that issued `code`; undefined for a code this fake never issued. */
  authorizationOf(code: string | null | undefined): URLSearchParams | undefined;
  close(): Promise<void>;
}

export interface FakeProviderOptions {
  /** Where the provider's login page is; /authorize unless told (GitHub: /login/oauth/authorize). */
  authorizePath?: string;
  /** RFC 9207: the `iss` the provider adds to its redirect back, if any. */
  iss?: () => string | undefined;
}

/**
 * A provider in a plain node:http server. `routes` answer by "METHOD /path"
 * (or "/path" for any method); every request is recorded. Its authorize page
 * approves at once, as a provider does once its user has signed in and
 * consented: a 302 back to redirect_uri with a new code and the state.
 */
export async function startFakeProvider(routes: Record<string, Route>, options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const authorizePath = options.authorizePath ?? "/authorize";
  const requests: UpstreamRequest[] = [];
  const authorizations: URLSearchParams[] = [];
  const codes = new Map<string, URLSearchParams>();

  const approve = (url: URL, res: ServerResponse) => {
    const query = url.searchParams;
    authorizations.push(query);
    const redirectUri = query.get("redirect_uri");
    if (!redirectUri) return res.writeHead(400, { "content-type": "text/plain" }).end("no redirect_uri");
    const code = `fake-code-${randomBytes(8).toString("hex")}`;
    codes.set(code, query);
    const back = new URL(redirectUri);
    back.searchParams.set("code", code);
    if (query.has("state")) back.searchParams.set("state", query.get("state")!);
    const iss = options.iss?.();
    if (iss) back.searchParams.set("iss", iss);
    res.writeHead(302, { location: back.href }).end();
  };

  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const path = url.pathname;
      requests.push({ method: req.method ?? "", path, headers: req.headers, body });
      if (req.method === "GET" && path === authorizePath) return approve(url, res);
      const route = routes[`${req.method} ${path}`] ?? routes[path];
      if (!route) return void res.writeHead(404).end();
      Promise.resolve(route(req, res, body)).catch(() => res.headersSent || res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    authorizations,
    authorizationOf: (code) => (code ? codes.get(code) : undefined),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A Custom provider: a token endpoint and a UserInfo endpoint that follow
 * the spec by default, and that a test can make misbehave, plus the
 * authorize page of startFakeProvider. It records every request.
 */
export interface FakeUpstream extends FakeProvider {
  /** The access tokens its token endpoint issued. */
  issuedTokens: string[];
  token: Behaviour;
  userinfo: Behaviour;
  profile: Record<string, unknown>;
  /** Back to the spec-following behaviours, FAKE_PROFILE and no requests. */
  reset(): void;
  /** A provider entry for our config file that points here. */
  provider(name: string, over?: Record<string, unknown>): Record<string, unknown>;
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const fake = {} as FakeUpstream;
  const issuedTokens: string[] = [];

  const specToken: Behaviour = (_req, res, body) => {
    // RFC 6749 §4.1.3 and RFC 7636 §4.6 for a code its authorize page issued: the same redirect_uri, and the verifier of its challenge.
    const form = new URLSearchParams(body);
    const authorization = fake.authorizationOf(form.get("code"));
    if (authorization && authorization.get("redirect_uri") !== form.get("redirect_uri")) return sendJsonBody(res, 400, { error: "invalid_grant" });
    if (authorization?.has("code_challenge") && !pkceHolds(authorization, form.get("code_verifier"))) return sendJsonBody(res, 400, { error: "invalid_grant" });
    const accessToken = `upstream-at-${randomBytes(8).toString("hex")}`;
    issuedTokens.push(accessToken);
    sendJsonBody(res, 200, { access_token: accessToken, token_type: "Bearer", expires_in: 3600, refresh_token: "upstream-rt", scope: "openid profile email" });
  };
  const specUserinfo: Behaviour = (req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!token || !issuedTokens.includes(token)) return sendJsonBody(res, 401, { error: "invalid_token" });
    sendJsonBody(res, 200, fake.profile);
  };

  const provider = await startFakeProvider({
    "/token": (req, res, body) => fake.token(req, res, body),
    "/userinfo": (req, res, body) => fake.userinfo(req, res, body),
  });
  Object.assign(fake, provider, { issuedTokens });
  fake.reset = () => {
    fake.token = specToken;
    fake.userinfo = specUserinfo;
    fake.profile = { ...FAKE_PROFILE };
    fake.requests.length = 0;
    fake.authorizations.length = 0;
  };
  fake.reset();
  const { origin } = provider;
  fake.provider = (name, over = {}) => ({
    name,
    type: "Custom",
    displayName: "Fake IdP",
    ...FAKE_CLIENT,
    authUrl: `${origin}/authorize`,
    scope: "openid profile email",
    tokenUrl: `${origin}/token`,
    userInfoUrl: `${origin}/userinfo`,
    favicon: `${origin}/favicon.svg`,
    ...over,
  });
  return fake;
}
