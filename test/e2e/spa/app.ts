/**
 * A single-page app on an origin of its own, as corsBrowser.spec.ts serves
 * it: signs in with the authorization code and PKCE as a public client (no
 * secret), exchanges the code with fetch, then calls userinfo and get-account with fetch
 * and two RPCs through @connectrpc/connect-web (Connect and gRPC-Web). Bundled by
 * esbuild (test/support/spaServer.ts). Each step's outcome lands in #result.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { DiscoveryService } from "../../../gen/identity/v1/discovery_pb.js";
import { IntrospectionService } from "../../../gen/identity/v1/introspection_pb.js";

// The DOM is not in this project's TypeScript lib: the few parts used here.
interface Element {
  textContent: string | null;
  dataset: Record<string, string | undefined>;
}
declare const document: { body: Element; getElementById(id: string): Element | null };
declare const location: { origin: string; pathname: string; search: string; assign(url: string): void };
declare const sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };

const issuer = document.body.dataset.issuer!;
const clientId = document.body.dataset.clientId!;
const redirectUri = `${location.origin}/callback`;

const base64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const random = (length: number) => base64url(crypto.getRandomValues(new Uint8Array(length)));

async function signIn(): Promise<void> {
  const verifier = random(32);
  const state = random(16);
  sessionStorage.setItem("pkce", JSON.stringify({ verifier, state }));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  const url = new URL("/login/oauth/authorize", issuer);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: "openid profile email account",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString();
  location.assign(url.href);
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

async function step(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    return { ok: false, error: String(err) };
  }
}

async function afterSignIn(): Promise<Record<string, Outcome>> {
  const params = new URLSearchParams(location.search);
  const saved = JSON.parse(sessionStorage.getItem("pkce") ?? "{}") as { verifier?: string; state?: string };
  if (!saved.state || params.get("state") !== saved.state) throw new Error("state does not match");
  let accessToken = "no-token";
  const token = await step(async () => {
    // A form body: a CORS "simple" request, sent without a preflight.
    const res = await fetch(new URL("/api/login/oauth/access_token", issuer), {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "authorization_code",
        client_id: clientId,
        code: params.get("code") ?? "",
        redirect_uri: redirectUri,
        code_verifier: saved.verifier ?? "",
      }),
    });
    const body = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
    accessToken = String(body.access_token);
    return { status: res.status, fields: Object.keys(body).sort(), scope: body.scope };
  });
  const authorization = { authorization: `Bearer ${accessToken}` };
  const userinfo = await step(async () => {
    // The Authorization header makes this one preflighted.
    const res = await fetch(new URL("/api/userinfo", issuer), { headers: authorization });
    return { status: res.status, body: await res.json(), requestId: res.headers.get("x-request-id") };
  });
  const restAccount = await step(async () => {
    // Casdoor's REST get-account, preflighted as userinfo is.
    const res = await fetch(new URL("/api/get-account", issuer), { headers: authorization });
    const body = (await res.json()) as { status?: string; data?: { name?: string } };
    return { status: res.status, answer: body.status, name: body.data?.name };
  });
  const sessionAccount = await step(async () => {
    // The service's session cookie instead of a token: the browser sends it
    // (same site), but keeps the answer from the script (no credentials mode).
    const res = await fetch(new URL("/api/get-account", issuer), { credentials: "include" });
    return { status: res.status, body: await res.text() };
  });
  const account = await step(async () => {
    const client = createClient(IntrospectionService, createConnectTransport({ baseUrl: issuer }));
    const answer = await client.getAccount({}, { headers: authorization });
    return { status: answer.status, name: answer.data?.name, email: answer.data?.email };
  });
  const jwks = await step(async () => {
    const client = createClient(DiscoveryService, createGrpcWebTransport({ baseUrl: issuer }));
    return { keys: (await client.getJwks({})).keys.length };
  });
  return { token, userinfo, restAccount, sessionAccount, account, jwks };
}

function show(id: string, value: unknown): void {
  document.getElementById(id)!.textContent = JSON.stringify(value);
}

if (location.pathname === "/callback") {
  afterSignIn().then(
    (outcomes) => show("result", outcomes),
    (err: unknown) => show("result", { failed: String(err) }),
  );
} else {
  signIn().catch((err: unknown) => show("result", { failed: String(err) }));
}
