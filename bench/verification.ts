import { h2load, GRPC_INTROSPECT_PATH, introspectionCall } from "./h2load.js";
import { CONNECTIONS, FORM, httpLoad, measured, post, type TurnLoad } from "./load.js";
import { clientAuth, clientTokens, introspectionRequests, userinfoRequests, userTokens, basicAuth, type OurServer } from "./ours.js";
import { failed, type Row } from "./report.js";
import { OIDC_CLIENT } from "./references/shared.js";
import { settings } from "./settings.js";
import { parsePrometheusText, sampleValue } from "../test/support/prometheus.js";

/** The bare node:http reference's request: a form POST like an introspection's. */
export const BARE_BODY = { token: "x".repeat(300), grant_type: "client_credentials" };

/** Our gRPC introspection load by h2load: one token, `CONNECTIONS` streams on one h2c connection. */
export const grpcLoad = (url: string, token: string, dir: string) =>
  h2load({ url: url + GRPC_INTROSPECT_PATH, body: introspectionCall(token), headers: { "content-type": "application/grpc+proto", te: "trailers", ...clientAuth() }, dir, clients: CONNECTIONS });

/** gRPC introspections so far that did not end with grpc-status 0 and an active token, from the server's metrics. */
export async function grpcNotOk(url: string): Promise<number> {
  const route = `connect:${GRPC_INTROSPECT_PATH.slice(1)}`;
  const samples = parsePrometheusText(await (await fetch(url + "/metrics")).text());
  return samples
    .filter((s) => s.name === "identity_http_requests_total" && s.labels.route === route && s.labels.grpc_status !== "0" && s.labels.grpc_status !== "")
    .reduce((sum, s) => sum + s.value, sampleValue(samples, "identity_introspections_total", { result: "inactive" }));
}

/**
 * node-oidc-provider's introspection load. Its in-memory store keeps the
 * last 1,000 entries, JWT access tokens included: run it after its
 * client_credentials loads.
 */
async function oidcIntrospection(url: string): Promise<TurnLoad> {
  const headers = { "content-type": FORM, authorization: basicAuth(OIDC_CLIENT.id, OIDC_CLIENT.secret) };
  const tokens: string[] = [];
  for (let i = 0; i < settings.tokens; i++) {
    const response = await fetch(url + "/token", { method: "POST", headers, body: "grant_type=client_credentials" });
    tokens.push(((await response.json()) as { access_token: string }).access_token);
  }
  const check = await fetch(url + "/token/introspection", { method: "POST", headers, body: new URLSearchParams({ token: tokens[0]! }) });
  if (((await check.json()) as { active?: boolean }).active !== true) throw new Error("node-oidc-provider: introspection says inactive");
  return httpLoad(url, tokens.map((token) => post("/token/introspection", { token }, { authorization: headers.authorization })));
}

export interface References {
  bare: string;
  bare2: string;
  oidc: string;
}

/**
 * Introspection and userinfo against the bare node:http server and
 * node-oidc-provider's introspection, in turns; then gRPC introspection
 * against REST introspection of the same token (h2load sends one body;
 * concurrent lookups of one token share a read) and the bare node:http2
 * server, in turns. h2load sees only HTTP statuses, so the gRPC statuses
 * come from our metrics. Returns the rows, the introspected tokens and the
 * bare node:http2 figure.
 */
export async function verificationRows(ours: OurServer, references: References, dir: string): Promise<{ rows: Row[]; tokens: string[]; figures: string[] }> {
  const tokens = await clientTokens(ours, settings.tokens);
  const users = await userTokens(ours, settings.userTokens);
  const [introspection, userinfo, bare, oidc] = await measured(
    ["introspection: ours", "userinfo: ours", "bare node:http", "node-oidc-provider introspection"],
    [httpLoad(ours.url, introspectionRequests(tokens)), httpLoad(ours.url, userinfoRequests(users)), httpLoad(references.bare, [post("/", BARE_BODY)]), await oidcIntrospection(references.oidc)],
  );
  const notOkBefore = await grpcNotOk(ours.url);
  const [grpc, rest, bare2] = await measured(
    ["gRPC introspection: ours", "REST introspection of the same token", "bare node:http2"],
    [grpcLoad(ours.url, tokens[0]!, dir), httpLoad(ours.url, introspectionRequests(tokens.slice(0, 1))), h2load({ url: references.bare2, body: "x", headers: {}, dir, clients: CONNECTIONS })],
  );
  grpc!.failures += (await grpcNotOk(ours.url)) - notOkBefore;
  const intro = { scenario: "introspection of a valid access token, Basic auth", ours: introspection!.rps, unit: "req/s", comparison: "atLeast" } as const;
  const rows: Row[] = [
    { ...intro, referenceLabel: "node-oidc-provider introspection", reference: oidc!.rps, target: 3, problem: failed(introspection!, oidc!) },
    { ...intro, referenceLabel: "bare node:http", reference: bare!.rps, target: 0.35, problem: failed(introspection!, bare!) },
    { scenario: "userinfo with a Bearer token", ours: userinfo!.rps, unit: "req/s", referenceLabel: "bare node:http", reference: bare!.rps, comparison: "atLeast", target: 0.35, problem: failed(userinfo!, bare!) },
    {
      scenario: `gRPC (h2c) introspection, ${CONNECTIONS} concurrent calls`,
      ours: grpc!.rps,
      unit: "req/s",
      referenceLabel: "REST introspection of the same token",
      reference: rest!.rps,
      comparison: "atLeast",
      target: 1,
      problem: failed(grpc!, rest!, bare2!),
    },
  ];
  const figures = [`bare node:http2, gRPC-shaped unary calls by h2load, in turns with the gRPC row: ${Math.round(bare2!.rps).toLocaleString("en-US")} req/s`];
  return { rows, tokens, figures };
}
