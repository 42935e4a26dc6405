import assert from "node:assert/strict";
import type { RunningServer } from "../../src/server.js";
import { basicAuth, postForm, TEST_APP, TEST_USER } from "./server.js";

/** Any running instance: an in-process server or a spawned process. */
export type Reachable = Pick<RunningServer, "url">;

export interface TestClient {
  clientId: string;
  clientSecret: string;
}

/** What a successful token response holds. */
export interface Tokens {
  access_token: string;
  id_token?: string;
  refresh_token?: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

/** Tokens for TEST_USER through the password grant; fails the test on any error. */
export async function passwordTokens(
  server: Reachable,
  options: { scope?: string; client?: TestClient; user?: { name: string; password: string } } = {},
): Promise<Tokens> {
  const client = options.client ?? TEST_APP;
  const user = options.user ?? TEST_USER;
  const res = await postForm(`${server.url}/api/login/oauth/access_token`, {
    grant_type: "password",
    client_id: client.clientId,
    client_secret: client.clientSecret,
    username: user.name,
    password: user.password,
    ...(options.scope === undefined ? {} : { scope: options.scope }),
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** POST /api/login/oauth/refresh_token with body credentials. */
export function refresh(
  server: Reachable,
  refreshToken: string,
  extra: Record<string, string> = {},
  client: TestClient = TEST_APP,
) {
  return postForm(`${server.url}/api/login/oauth/refresh_token`, {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: client.clientId,
    client_secret: client.clientSecret,
    ...extra,
  });
}

/** Whether introspection calls the token active. */
export async function isActive(server: Reachable, token: string, client: TestClient = TEST_APP): Promise<boolean> {
  const res = await postForm(
    `${server.url}/api/login/oauth/introspect`,
    { token, token_type_hint: "access_token" },
    { authorization: basicAuth(client.clientId, client.clientSecret) },
  );
  assert.equal(res.status, 200);
  return res.body.active;
}

/** GET a JSON API with optional headers; returns status, headers and parsed body. */
export async function getJson(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}
