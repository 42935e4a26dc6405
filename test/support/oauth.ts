import assert from "node:assert/strict";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { basicAuth, call, postForm, TEST_APP, TEST_USER, type HttpResult } from "./server.js";

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

/** GET a JSON API with optional headers. */
export function getJson(url: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  return call(url, { headers });
}

export const TOKEN_PATH = "/api/login/oauth/access_token";
export const INTROSPECT_PATH = "/api/login/oauth/introspect";

export { call, type HttpResult };

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return call(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

/**
 * Check an RFC 6749 §5.2 error: the status, exactly `error` and
 * `error_description`, JSON, not cacheable, and the Basic challenge that
 * RFC 6749 asks for on invalid_client.
 */
export function assertOAuthError(res: HttpResult, status: number, error: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(Object.keys(res.body).sort(), ["error", "error_description"]);
  assert.equal(res.body.error, error);
  assert.equal(typeof res.body.error_description, "string");
  assert.equal(res.headers.get("cache-control"), "no-store");
  if (error === "invalid_client") assert.match(res.headers.get("www-authenticate") ?? "", /^Basic /);
}

/** A verifier for tokens from this server: signature against its published JWKS, iss and aud. */
export async function tokenVerifier(server: RunningServer, audience: string) {
  const jwks = await call(`${server.url}/.well-known/jwks`);
  assert.equal(jwks.status, 200);
  const keySet = createLocalJWKSet(jwks.body);
  return async (token: string, typ: string): Promise<JWTPayload & Record<string, unknown>> => {
    assert.equal(decodeProtectedHeader(token).typ, typ);
    // exp and nbf are judged by the server's (possibly fake) clock.
    const { payload, protectedHeader } = await jwtVerify(token, keySet, {
      issuer: server.issuer,
      audience,
      algorithms: ["RS256"],
      currentDate: new Date(server.domain.clock.now()),
    });
    assert.ok(protectedHeader.kid);
    return payload as JWTPayload & Record<string, unknown>;
  };
}
