import http2 from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { buildRouteTable } from "../../../src/rest/routes.js";
import { serviceBindings } from "../../../src/rpc/services.js";
import type { RunningServer } from "../../../src/app/server.js";
import { checkApiAnswer, checkConnectAnswer, checkGrpcWebAnswer, checkPageAnswer, expect, expectGrpcStatus, type RedirectCheck } from "./checks.js";
import { extraHeadersArb, httpCaseArb, oneLine, rarely, type HttpCase, toWire } from "./http.js";
import {
  authorizationFor, binaryMessageArb, connectContentTypeArb, connectHeadersArb, envelopesArb, grpcJsRaw, h2Raw, jsonMessageArb,
} from "./rpc.js";
import { hostileString, type KnownValues } from "./values.js";
import { exchange } from "./wire.js";

/** One thing to fuzz: how to generate its cases and how to send and judge one. */
export interface FuzzEndpoint {
  name: string;
  arbitrary: fc.Arbitrary<unknown>;
  /** Sends one case; throws a Violation when the answer breaks a promise. */
  run(value: unknown): Promise<void>;
}

/** What the endpoints need from the running server. */
export interface FuzzTarget {
  server: RunningServer;
  known: KnownValues;
  maxBodyBytes: number;
  /** A provider that the test application offers (for the provider button path). */
  providerName: string;
}

/** Shared connections for the HTTP/2 protocols; close them after the run. */
export interface FuzzConnections {
  grpcClient: grpc.Client;
  h2(): http2.ClientHttp2Session;
  close(): void;
}

export function openConnections(server: RunningServer): FuzzConnections {
  const grpcClient = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  let session: http2.ClientHttp2Session | undefined;
  return {
    grpcClient,
    // A GOAWAY or a protocol error ends a session; the next case opens a new one.
    h2() {
      if (!session || session.closed || session.destroyed) {
        session = http2.connect(`http://127.0.0.1:${server.port}`);
        session.on("error", () => {});
      }
      return session;
    },
    close() {
      grpcClient.close();
      session?.destroy();
    },
  };
}

/** Every byte percent-encoded: any string, lone surrogates included, becomes a valid path segment. */
const percentEncode = (s: string) => [...Buffer.from(s, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");

const endpoint = <T>(name: string, arbitrary: fc.Arbitrary<T>, run: (value: T) => Promise<void>): FuzzEndpoint => ({
  name,
  arbitrary,
  run: run as (value: unknown) => Promise<void>,
});

/** A case with its body cut short may get no answer; a case with a forged length header may get a 400 and a close. */
const mayClose = (c: HttpCase) => c.cut !== undefined;

/**
 * Every public REST path (from the route table the facade is built from),
 * every browser path, and every RPC over Connect JSON, Connect binary,
 * gRPC-Web, gRPC (grpc-js, raw message bytes) and raw HTTP/2 gRPC frames.
 */
export function fuzzEndpoints(target: FuzzTarget, connections: FuzzConnections): FuzzEndpoint[] {
  const { server, known, maxBodyBytes } = target;
  const port = server.port;
  const bindings = serviceBindings(server.domain);
  const endpoints: FuzzEndpoint[] = [];

  for (const [path, byMethod] of buildRouteTable(bindings)) {
    const methods = [...byMethod.keys()];
    const names = [...byMethod.values()].flatMap((r) => r.method.input.fields.flatMap((f) => [f.name, f.jsonName]));
    endpoints.push(
      endpoint(`REST ${methods.join("|")} ${path}`, httpCaseArb(fc.constant(path), methods, names, known, maxBodyBytes), async (c) =>
        checkApiAnswer(c.method, await exchange(port, toWire(c)), mayClose(c)),
      ),
    );
  }

  const registered = new URL(known.redirectUri);
  // RFC 8252 §7.3: a loopback redirect may use any port; everything else must match.
  const toClient: RedirectCheck = (url) =>
    url.protocol === registered.protocol && url.hostname === registered.hostname && url.pathname === registered.pathname && !url.username && !url.password;
  const withCookie = (arb: fc.Arbitrary<HttpCase>) =>
    fc.tuple(arb, fc.option(fc.constantFrom(`identity_csrf=${known.csrfToken}`, `identity_session=${known.sessionCookie}; identity_csrf=${known.csrfToken}`), { freq: 3, nil: undefined })).map(
      ([c, cookie]): HttpCase => (cookie ? { ...c, extra: [["cookie", cookie], ...c.extra] } : c),
    );
  const page = (name: string, path: fc.Arbitrary<string>, methods: string[], params: string[]) =>
    endpoint(name, withCookie(httpCaseArb(path, methods, params, known, maxBodyBytes)), async (c) =>
      checkPageAnswer(c.method, await exchange(port, toWire(c)), mayClose(c), toClient),
    );
  const authorizeParams = ["client_id", "redirect_uri", "response_type", "scope", "state", "nonce", "code_challenge", "code_challenge_method", "prompt", "max_age", "response_mode", "login_hint", "claims"];
  endpoints.push(
    page("browser GET|POST /login/oauth/authorize", fc.constant("/login/oauth/authorize"), ["GET", "POST"], authorizeParams),
    page("browser POST /login", fc.constant("/login"), ["POST"], ["request", "csrf_token", "username", "password"]),
    page(
      "browser POST /login/oauth/provider/<name>",
      fc.oneof(
        fc.constant(`/login/oauth/provider/${target.providerName}`),
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,100}$/).map((n) => `/login/oauth/provider/${n}`),
        hostileString().map((n) => `/login/oauth/provider/${percentEncode(n)}`),
      ),
      ["POST"],
      ["request", "csrf_token"],
    ),
    page(
      "browser GET /callback/<name>",
      fc.oneof(
        fc.constant("/callback"),
        fc.constant(`/callback/${target.providerName}`),
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,100}$/).map((n) => `/callback/${n}`),
        hostileString().map((n) => `/callback/${percentEncode(n)}`),
      ),
      ["GET"],
      ["state", "code", "iss", "error", "error_description"],
    ),
    page("browser GET /login/assets/login.css", fc.constant("/login/assets/login.css"), ["GET"], []),
    page("browser GET|POST /api/logout", fc.constant("/api/logout"), ["GET", "POST"], ["id_token_hint", "post_logout_redirect_uri", "state", "client_id"]),
  );

  for (const { service } of bindings) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      endpoints.push(...rpcEndpoints(method, target, connections));
    }
  }
  return endpoints;
}

function rpcEndpoints(method: DescMethod, target: FuzzTarget, connections: FuzzConnections): FuzzEndpoint[] {
  const { known, server } = target;
  const port = server.port;
  const path = `/${method.parent.typeName}/${method.name}`;
  const auth = authorizationFor(method, known);
  const binary = binaryMessageArb(method.input, known);
  const noise = extraHeadersArb(known);

  const connect = (format: "json" | "proto") =>
    fc
      .record({
        httpMethod: fc.oneof({ weight: 19, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: fc.constantFrom("GET", "PUT", "HEAD") }),
        contentType: connectContentTypeArb(format === "proto"),
        body: format === "json" ? jsonMessageArb(method.input, known).map((s) => new Uint8Array(Buffer.from(s, "utf8"))) : binary,
        authorization: auth,
        protocol: connectHeadersArb(),
        extra: fc.oneof({ weight: 4, arbitrary: fc.constant([] as Array<[string, string]>) }, { weight: 1, arbitrary: noise }),
        http10: rarely,
      })
      .map((c): HttpCase => ({
        http10: c.http10,
        method: c.httpMethod,
        path,
        query: "",
        contentType: c.contentType,
        authorization: c.authorization,
        body: c.body,
        extra: [...c.protocol, ...c.extra],
      }));

  const grpcWeb = fc
    .record({
      contentType: fc.oneof({ weight: 8, arbitrary: fc.constantFrom("application/grpc-web+proto", "application/grpc-web") }, { weight: 1, arbitrary: fc.constantFrom("application/grpc-web+json", "application/grpc-web-text", "application/grpc") }),
      body: envelopesArb(binary),
      authorization: auth,
      extra: fc.oneof({ weight: 4, arbitrary: fc.constant([["x-grpc-web", "1"]] as Array<[string, string]>) }, { weight: 1, arbitrary: noise }),
    })
    .map((c): HttpCase => ({ method: "POST", path, query: "", contentType: c.contentType, authorization: c.authorization, body: c.body, extra: c.extra }));

  const grpcJs = fc.record({ message: binary, authorization: auth, cookie: fc.option(fc.constant(`identity_session=${known.sessionCookie}`), { nil: undefined }) });

  const h2 = fc.record({
    contentType: fc.oneof({ weight: 6, arbitrary: fc.constantFrom("application/grpc", "application/grpc+proto") }, { weight: 1, arbitrary: fc.constantFrom("application/grpc+json", "application/grpc+xml", "text/plain") }),
    encoding: fc.option(fc.constantFrom("identity", "gzip", "deflate", "snappy", ""), { freq: 3, nil: undefined }),
    timeout: fc.option(fc.constantFrom("1n", "1m", "5S", "99999999H", "abc", "-1S", "123456789S"), { freq: 3, nil: undefined }),
    te: fc.option(fc.constant("trailers"), { freq: 6, nil: undefined }),
    authorization: auth,
    body: envelopesArb(binary),
  });

  return [
    endpoint(`Connect JSON ${path}`, connect("json"), async (c) =>
      checkConnectAnswer(c, await exchange(port, toWire(c))),
    ),
    endpoint(`Connect binary ${path}`, connect("proto"), async (c) => checkConnectAnswer(c, await exchange(port, toWire(c)))),
    endpoint(`gRPC-Web ${path}`, grpcWeb, async (c) => checkGrpcWebAnswer(await exchange(port, toWire(c)), false, c.http10)),
    endpoint(`gRPC (grpc-js) ${path}`, grpcJs, async (c) => {
      const metadata: Record<string, string> = {};
      // grpc-js sends printable ASCII metadata only; the raw HTTP/2 cases send the rest.
      if (c.authorization !== undefined) metadata.authorization = c.authorization.replace(/[^\x20-\x7e]/g, "?");
      if (c.cookie !== undefined) metadata.cookie = c.cookie;
      const outcome = await grpcJsRaw(connections.grpcClient, path, c.message, metadata);
      expect(outcome.code !== grpc.status.DEADLINE_EXCEEDED, `no answer: ${outcome.details}`);
      expectGrpcStatus(outcome.code, `${outcome.code} ${outcome.details}`);
    }),
    endpoint(`gRPC frames (HTTP/2) ${path}`, h2, async (c) => {
      const headers: http2.OutgoingHttpHeaders = { ":method": "POST", ":path": path, "content-type": c.contentType };
      if (c.encoding !== undefined) headers["grpc-encoding"] = c.encoding;
      if (c.timeout !== undefined) headers["grpc-timeout"] = c.timeout;
      if (c.te !== undefined) headers.te = c.te;
      if (c.authorization !== undefined) headers.authorization = oneLine(c.authorization);
      const res = await h2Raw(connections.h2(), headers, c.body);
      if (res === "reset") return;
      const status = Number(res.headers[":status"]);
      expect(status < 500, `HTTP/2 status ${status}`, JSON.stringify(res));
      if (status !== 200) {
        expect(status === 415 || status === 405 || status === 400 || status === 431, `unexpected HTTP/2 status ${status}`, JSON.stringify(res));
        return;
      }
      const grpcStatus = res.trailers["grpc-status"] ?? res.headers["grpc-status"];
      // A deadline the caller set itself may run out; that is its status to get.
      if (String(grpcStatus) === String(grpc.status.DEADLINE_EXCEEDED) && c.timeout !== undefined) return;
      expectGrpcStatus(grpcStatus as string | undefined, JSON.stringify(res));
    }),
  ];
}
