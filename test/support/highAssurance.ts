import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { browse, CookieJar, loginFormFields, submit } from "./browserless.js";
import { TEST_USER } from "./server.js";

/** The algorithms a request object may be signed with (RFC 9101), as jose names their keys. */
export type RequestObjectAlg = "RS256" | "PS256" | "ES256" | "Ed25519";
export const REQUEST_OBJECT_KEY_ALGS: RequestObjectAlg[] = ["RS256", "PS256", "ES256", "Ed25519"];

export interface ClientKey {
  alg: RequestObjectAlg;
  privateKey: CryptoKey;
  publicJwk: JWK;
  kid: string;
}

/** A client's key pair, its public half as it registers it. */
export async function clientKey(alg: RequestObjectAlg, kid = `${alg}-key`): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, privateKey, kid, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: alg === "Ed25519" ? "EdDSA" : alg } };
}

/** openid-client configured from our discovery document, over plain http on loopback. */
export function discover(server: Pick<RunningServer, "issuer">, clientId: string, auth: oidc.ClientAuth, metadata?: Partial<oidc.ClientMetadata>): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(server.issuer), clientId, metadata, auth, { execute: [oidc.allowInsecureRequests] });
}

/**
 * Follow an authorize URL as a browser would and sign in on the login form.
 * Returns the answer after the form: a redirect (303) or a form_post page (200).
 */
export async function signInAt(url: URL | string, jar = new CookieJar()): Promise<Response> {
  const page = await browse(String(url), jar);
  assert.equal(page.status, 200, `authorize answered ${page.status} ${page.headers.get("location") ?? (await page.clone().text()).slice(0, 300)}`);
  const base = new URL(String(url)).origin;
  return submit(`${base}/login`, { ...loginFormFields(await page.text()), username: TEST_USER.name, password: TEST_USER.password }, jar);
}

/** The Location of a redirect, which must be one. */
export function locationOf(res: Response): URL {
  assert.equal(res.status, 303, `expected a redirect, got ${res.status}`);
  return new URL(res.headers.get("location")!);
}
