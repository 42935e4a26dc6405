import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { decodeJwt } from "jose";
import { IntrospectionService, type IntrospectResponse } from "../../gen/identity/v1/introspection_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { OAuthErrorDetailSchema, TokenService, type TokenRequestSchema, type TokenResponse } from "../../gen/identity/v1/token_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { INTROSPECT_PATH, TOKEN_PATH } from "../support/oauth.js";
import { connectClients, grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { basicAuth, CC_ONLY_APP, CODE_ONLY_APP, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

type Params = Record<string, string>;
type Headers = Record<string, string>;

/** What a token response says, transport aside: present fields, and the claims minus the per-token jti and at_hash. */
function tokenShape(body: Record<string, unknown>) {
  const fields = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== "" && v !== undefined));
  const { jti, ...claims } = decodeJwt(String(body.access_token));
  assert.ok(jti);
  return {
    fields: Object.keys(fields).sort(),
    token_type: body.token_type,
    expires_in: Number(body.expires_in),
    scope: body.scope,
    claims,
    idClaims: body.id_token ? idTokenShape(String(body.id_token)) : undefined,
  };
}

/** An id_token's claims minus at_hash, which hashes its own access token (so differs per token like jti). */
function idTokenShape(idToken: string) {
  const { at_hash, ...claims } = decodeJwt(idToken);
  assert.ok(at_hash);
  return claims;
}

/** A Connect response message in the REST field names. */
const tokenFields = (r: TokenResponse) => ({
  access_token: r.accessToken, id_token: r.idToken, refresh_token: r.refreshToken, token_type: r.tokenType, expires_in: r.expiresIn, scope: r.scope,
});

const connectRequest = (p: Params): MessageInitShape<typeof TokenRequestSchema> => ({
  grantType: p.grant_type, clientId: p.client_id, clientSecret: p.client_secret, scope: p.scope, username: p.username, password: p.password,
});

const introspectionFields = (r: IntrospectResponse) =>
  Object.fromEntries(
    Object.entries({
      active: r.active, client_id: r.clientId, username: r.username, token_type: r.tokenType, exp: Number(r.exp), iat: Number(r.iat),
      nbf: Number(r.nbf), sub: r.sub, aud: r.aud, iss: r.iss, scope: r.scope, jti: r.jti,
    }).filter(([, v]) => v !== "" && v !== 0 && !(Array.isArray(v) && v.length === 0)),
  );

describe("TokenService and IntrospectionService over gRPC and Connect, on the REST port", () => {
  let server: RunningServer;
  let grpcJs: ReturnType<typeof grpcJsClients>;
  let tokens: ReturnType<typeof connectClients<typeof TokenService>>;
  let introspection: ReturnType<typeof connectClients<typeof IntrospectionService>>;
  // A stopped clock: tokens minted through different doors get the same iat/exp.
  const clock = new FakeClock();
  const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP, CC_ONLY_APP, CODE_ONLY_APP], users: [TEST_USER] } });
    grpcJs = grpcJsClients(server.port);
    tokens = connectClients(TokenService, server.url);
    introspection = connectClients(IntrospectionService, server.url);
  });
  after(async () => {
    for (const client of Object.values(grpcJs)) client.close();
    await server.close();
  });

  /** The same token request through every door, as comparable shapes. */
  async function everyDoor(params: Params, headers: Headers = {}) {
    const rest = await postForm(server.url + TOKEN_PATH, params, headers);
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    const viaGrpcJs = await grpcJsCall(grpcJs.token, "Token", params, headers);
    assert.ifError(viaGrpcJs.error);
    const viaConnect = await tokens.connect.token(connectRequest(params), { headers });
    const viaGrpcWeb = await tokens.grpcWeb.token(connectRequest(params), { headers });
    const viaGrpc = await tokens.grpc.token(connectRequest(params), { headers });
    return {
      rest: tokenShape(rest.body),
      grpcJs: tokenShape(viaGrpcJs.response),
      connect: tokenShape(tokenFields(viaConnect)),
      grpcWeb: tokenShape(tokenFields(viaGrpcWeb)),
      grpc: tokenShape(tokenFields(viaGrpc)),
    };
  }

  it("client_credentials gives the same answer over REST, grpc-js, Connect, gRPC-Web and Connect's gRPC", async () => {
    const shapes = await everyDoor({ grant_type: "client_credentials", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
    assert.deepEqual(shapes.rest.fields, ["access_token", "expires_in", "scope", "token_type"]);
    assert.equal(shapes.rest.claims.sub, TEST_APP.clientId);
    for (const door of ["grpcJs", "connect", "grpcWeb", "grpc"] as const) assert.deepEqual(shapes[door], shapes.rest, door);
  });

  it("the password grant with Basic credentials in metadata gives the same answer everywhere", async () => {
    const shapes = await everyDoor({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" }, basic);
    assert.deepEqual(shapes.rest.fields, ["access_token", "expires_in", "id_token", "refresh_token", "scope", "token_type"]);
    assert.equal(shapes.rest.claims.preferred_username, TEST_USER.name);
    assert.equal(shapes.rest.idClaims?.name, TEST_USER.displayName);
    for (const door of ["grpcJs", "connect", "grpcWeb", "grpc"] as const) assert.deepEqual(shapes[door], shapes.rest, door);
  });

  it("introspection agrees across REST, grpc-js and the Connect clients", async () => {
    const token = (await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials", scope: "openid email" }, basic)).body.access_token;
    for (const candidate of [token, "not-a-token"]) {
      const rest = await postForm(server.url + INTROSPECT_PATH, { token: candidate, token_type_hint: "access_token" }, basic);
      const viaGrpcJs = await grpcJsCall(grpcJs.introspection, "Introspect", { token: candidate }, basic);
      assert.ifError(viaGrpcJs.error);
      const { _active, ...grpcJsBody } = viaGrpcJs.response;
      assert.deepEqual(grpcJsBody, rest.body);
      for (const client of Object.values(introspection)) {
        assert.deepEqual(introspectionFields(await client.introspect({ token: candidate }, { headers: basic })), rest.body);
      }
    }
  });

  describe("errors carry the right status and the OAuth code", () => {
    const cc = { grant_type: "client_credentials" };
    const cases: { name: string; params: Params; headers?: Headers; error: string; code: Code }[] = [
      { name: "wrong secret", params: { ...cc, client_id: TEST_APP.clientId, client_secret: "wrong" }, error: "invalid_client", code: Code.Unauthenticated },
      { name: "unknown client", params: { ...cc, client_id: "nobody", client_secret: "x" }, error: "invalid_client", code: Code.Unauthenticated },
      { name: "malformed Basic", params: cc, headers: { authorization: "Basic %%%" }, error: "invalid_client", code: Code.Unauthenticated },
      { name: "Basic and body differ", params: { ...cc, client_id: CC_ONLY_APP.clientId }, headers: basic, error: "invalid_request", code: Code.InvalidArgument },
      { name: "disabled grant", params: cc, headers: { authorization: basicAuth(CODE_ONLY_APP.clientId, CODE_ONLY_APP.clientSecret) }, error: "unauthorized_client", code: Code.PermissionDenied },
      { name: "missing grant_type", params: {}, headers: basic, error: "invalid_request", code: Code.InvalidArgument },
      { name: "unsupported grant_type", params: { grant_type: "magic" }, headers: basic, error: "unsupported_grant_type", code: Code.InvalidArgument },
      { name: "missing username", params: { grant_type: "password", password: "x" }, headers: basic, error: "invalid_request", code: Code.InvalidArgument },
      { name: "wrong password", params: { grant_type: "password", username: TEST_USER.name, password: "wrong" }, headers: basic, error: "invalid_grant", code: Code.InvalidArgument },
    ];

    for (const c of cases) {
      it(`${c.name}: ${Code[c.code]} with x-oauth-error ${c.error}`, async () => {
        const viaGrpcJs = await grpcJsCall(grpcJs.token, "Token", c.params, c.headers);
        assert.ok(viaGrpcJs.error, "grpc-js call must fail");
        assert.equal(viaGrpcJs.error.code, c.code as number, "Connect and gRPC codes share numbers");
        assert.deepEqual(viaGrpcJs.error.metadata.get("x-oauth-error"), [c.error]);

        // grpc-js covers the gRPC wire format; the Connect protocol carries errors as JSON instead.
        const err = await tokens.connect.token(connectRequest(c.params), { headers: c.headers }).then(
          () => assert.fail("Connect call must fail"),
          (e: unknown) => ConnectError.from(e),
        );
        assert.equal(err.code, c.code);
        assert.equal(err.metadata.get("x-oauth-error"), c.error);
        assert.deepEqual(err.findDetails(OAuthErrorDetailSchema).map((d) => d.error), [c.error]);
      });
    }

    it("introspection with bad client credentials: Unauthenticated invalid_client", async () => {
      const headers = { authorization: basicAuth(TEST_APP.clientId, "wrong") };
      const viaGrpcJs = await grpcJsCall(grpcJs.introspection, "Introspect", { token: "x" }, headers);
      assert.equal(viaGrpcJs.error?.code, grpc.status.UNAUTHENTICATED);
      assert.deepEqual(viaGrpcJs.error?.metadata.get("x-oauth-error"), ["invalid_client"]);
      const err = await introspection.connect.introspect({ token: "x" }, { headers }).catch((e: unknown) => ConnectError.from(e));
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.Unauthenticated);
    });

    it("a request over the size limit: ResourceExhausted, not Internal", async () => {
      const big = { ...cc, scope: "x".repeat(70_000) };
      const viaGrpcJs = await grpcJsCall(grpcJs.token, "Token", big, basic);
      assert.equal(viaGrpcJs.error?.code, grpc.status.RESOURCE_EXHAUSTED);
      const err = await tokens.connect.token(connectRequest(big), { headers: basic }).catch((e: unknown) => ConnectError.from(e));
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.ResourceExhausted);
    });
  });

  it("serves gRPC reflection on the same port", async () => {
    const names = await new Promise<string[]>((resolve, reject) => {
      const stream = grpcJs.reflection.ServerReflectionInfo();
      stream.on("data", (r: { list_services_response?: { service: { name: string }[] } }) =>
        resolve(r.list_services_response?.service.map((s) => s.name) ?? []),
      );
      stream.on("error", reject);
      stream.write({ list_services: "" });
      stream.end();
    });
    for (const name of ["identity.v1.TokenService", "identity.v1.IntrospectionService", "identity.v1.DiscoveryService", "grpc.reflection.v1.ServerReflection"]) {
      assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
    }
  });
});
