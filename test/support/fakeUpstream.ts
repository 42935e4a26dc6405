import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";

/** One request the fake provider received. */
export interface UpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How one endpoint answers; the default behaviours follow the spec. */
export type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

export const FAKE_CLIENT = { clientId: "ours at fake", clientSecret: "fake secret: with space+plus/and=colon" };

/** What the fake's UserInfo URL returns for a token it issued, unless a test says otherwise. */
export const FAKE_PROFILE = {
  sub: "fake-user-1",
  name: "Carol Upstream",
  preferred_username: "carol",
  email: "carol@upstream.example",
  picture: "https://upstream.example/carol.png",
};

/**
 * A Custom provider in a plain node:http server: a token endpoint and a
 * UserInfo endpoint that follow the spec by default, and that a test can
 * make misbehave. It records every request.
 */
export interface FakeUpstream {
  origin: string;
  requests: UpstreamRequest[];
  /** The access tokens its token endpoint issued. */
  issuedTokens: string[];
  token: Behaviour;
  userinfo: Behaviour;
  profile: Record<string, unknown>;
  /** Back to the spec-following behaviours, FAKE_PROFILE and no requests. */
  reset(): void;
  /** A provider entry for our config file that points here. */
  provider(name: string, over?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

export function sendJsonBody(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
  res.end(payload);
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const fake = {
    requests: [] as UpstreamRequest[],
    issuedTokens: [] as string[],
  } as FakeUpstream;

  const specToken: Behaviour = (_req, res) => {
    const accessToken = `upstream-at-${randomBytes(8).toString("hex")}`;
    fake.issuedTokens.push(accessToken);
    sendJsonBody(res, 200, { access_token: accessToken, token_type: "Bearer", expires_in: 3600, refresh_token: "upstream-rt", scope: "openid profile email" });
  };
  const specUserinfo: Behaviour = (req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!token || !fake.issuedTokens.includes(token)) return sendJsonBody(res, 401, { error: "invalid_token" });
    sendJsonBody(res, 200, fake.profile);
  };
  fake.reset = () => {
    fake.token = specToken;
    fake.userinfo = specUserinfo;
    fake.profile = { ...FAKE_PROFILE };
    fake.requests.length = 0;
  };
  fake.reset();

  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://fake").pathname;
      fake.requests.push({ method: req.method ?? "", path, headers: req.headers, body });
      if (path === "/token") return fake.token(req, res);
      if (path === "/userinfo") return fake.userinfo(req, res);
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.origin = origin;
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
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
