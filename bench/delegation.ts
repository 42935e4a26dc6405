import { randomUUID, sign, type KeyObject } from "node:crypto";
import { JWT_CLIENT_ID, jwtClientKey } from "./clientKeys.js";
import { failed, type Row } from "./report.js";
import { httpLoad, measured, post, type HttpRequest } from "./load.js";
import { clientAuth, EXCHANGE_AUDIENCE, TOKEN_PATH, type OurServer } from "./ours.js";

const EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

const base64url = (value: Buffer | string) => Buffer.from(value).toString("base64url");

/**
 * A fresh RFC 7523 client assertion: signed synchronously (node:crypto) so
 * that autocannon's per-request hook can make one per request, each with
 * its own jti, which the server accepts once.
 */
function clientAssertion(key: KeyObject, audience: string): string {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: "ES256", kid: "bench", typ: "JWT" }));
  const payload = base64url(JSON.stringify({ iss: JWT_CLIENT_ID, sub: JWT_CLIENT_ID, aud: audience, iat: now, exp: now + 60, jti: randomUUID() }));
  const signature = sign("sha256", Buffer.from(`${header}.${payload}`), { key, dsaEncoding: "ieee-p1363" });
  return `${header}.${payload}.${base64url(signature)}`;
}

export function privateKeyJwtRequest(issuer: string): HttpRequest {
  const request = post(TOKEN_PATH, { grant_type: "client_credentials" });
  return {
    ...request,
    setupRequest: (req) => ({
      ...req,
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: JWT_CLIENT_ID,
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: clientAssertion(jwtClientKey, issuer),
      }).toString(),
    }),
  };
}

async function accessToken(server: OurServer): Promise<string> {
  const response = await fetch(server.url + TOKEN_PATH, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...clientAuth("RS256") },
    body: new URLSearchParams({ grant_type: "client_credentials" }),
  });
  const json = (await response.json()) as { access_token?: string };
  if (!json.access_token) throw new Error(`client_credentials for the exchange's subject token: ${response.status} ${JSON.stringify(json)}`);
  return json.access_token;
}

/**
 * Issue 44's two rows, each in turns: client_credentials authenticated by
 * private_key_jwt (ES256) against the same grant with client_secret_basic;
 * and token exchange (impersonation, one subject token) against
 * client_credentials of the same application.
 */
export async function delegationRows(server: OurServer): Promise<Row[]> {
  const basic = post(TOKEN_PATH, { grant_type: "client_credentials" }, clientAuth("ES256"));
  const [assertion, secret] = await measured(
    ["client_credentials, private_key_jwt ES256", "client_credentials, client_secret_basic"],
    [httpLoad(server.url, [privateKeyJwtRequest(server.url)]), httpLoad(server.url, [basic])],
  );
  const subject = await accessToken(server);
  const exchange = post(
    TOKEN_PATH,
    { grant_type: EXCHANGE_GRANT, subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, audience: EXCHANGE_AUDIENCE },
    clientAuth("RS256"),
  );
  const [exchanged, issued] = await measured(
    ["token exchange", "client_credentials, same application"],
    [httpLoad(server.url, [exchange]), httpLoad(server.url, [post(TOKEN_PATH, { grant_type: "client_credentials" }, clientAuth("RS256"))])],
  );
  return [
    { scenario: "client_credentials, private_key_jwt (ES256)", ours: assertion!.rps, unit: "req/s", referenceLabel: "the same with client_secret_basic", reference: secret!.rps, comparison: "atLeast", problem: failed(assertion!, secret!) },
    { scenario: "token exchange (impersonation)", ours: exchanged!.rps, unit: "req/s", referenceLabel: "client_credentials, same application", reference: issued!.rps, comparison: "atLeast", problem: failed(exchanged!, issued!) },
  ];
}
