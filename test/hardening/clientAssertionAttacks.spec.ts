import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type AddressInfo } from "node:net";
import { createClient, ConnectError, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import * as oidc from "openid-client";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { ADMIN_TOKEN, postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";

const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

interface Signer {
  privateKey: CryptoKey;
  jwks: { keys: JWK[] };
}

async function signer(): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  return { privateKey, jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: randomUUID(), alg: "ES256" }] } };
}

async function assertionFor(clientId: string, audience: string, key: Signer): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), exp: now + 60, iat: now })
    .setProtectedHeader({ alg: "ES256", kid: key.jwks.keys[0]!.kid })
    .sign(key.privateKey);
}

const tokenRequest = (server: RunningServer, clientAssertion: string): Promise<HttpResult> =>
  postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: "client_credentials", client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion });

describeEachDatabase("client assertion replay across instances sharing one database", (ctx) => {
  let key: Signer;
  let servers: RunningServer[] = [];
  const APP = { name: "workload", clientId: "client-workload", grantTypes: ["client_credentials"], tokenEndpointAuthMethod: "private_key_jwt" };

  before(async () => {
    key = await signer();
    const config = { applications: [TEST_APP, { ...APP, jwks: key.jwks }], users: [TEST_USER] };
    // Replays are failures and count against the budgets; this test is about the jti alone.
    const overrides = { issuer: "http://identity.test", clientAuthMaxFailures: 0, clientAuthMaxFailuresPerIp: 0 };
    // One after the other: the second finds the database the first migrated.
    servers.push(await startTestServer({ config, database: ctx.url, overrides }));
    servers.push(await startTestServer({ config, database: ctx.url, overrides }));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
  });

  it("accepts an assertion at one instance and refuses it at the other, also when both see it at once", async () => {
    const once = await assertionFor(APP.clientId, "http://identity.test", key);
    assert.equal((await tokenRequest(servers[0]!, once)).status, 200);
    const replay = await tokenRequest(servers[1]!, once);
    assert.equal(replay.status, 401);
    assert.equal(replay.body.error, "invalid_client");

    for (let round = 0; round < 5; round++) {
      const raced = await assertionFor(APP.clientId, "http://identity.test", key);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => tokenRequest(servers[i % 2]!, raced)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, ...Array(9).fill(401)], `round ${round}`);
    }
  });
  // Each :memory: server would have a database of its own.
}, BACKENDS.filter((b) => b.name !== "SQLite :memory:"));

describe("client assertions under the client-authentication budgets", () => {
  let server: RunningServer;
  let key: Signer;
  const APP = { name: "locked-out", clientId: "client-locked", grantTypes: ["client_credentials"], tokenEndpointAuthMethod: "private_key_jwt" };

  before(async () => {
    key = await signer();
    server = await startTestServer({
      config: { applications: [TEST_APP, { ...APP, jwks: key.jwks }], users: [TEST_USER] },
      overrides: { clientAuthMaxFailures: 3, clientAuthMaxFailuresPerIp: 1000, clientAuthLockoutSeconds: 300 },
    });
  });
  after(() => server.close());

  it("counts failed assertions against the client_id, and refuses the client's own valid assertion once it is locked", async () => {
    const stranger = await signer();
    for (let i = 0; i < 3; i++) {
      const res = await tokenRequest(server, await assertionFor(APP.clientId, server.issuer, stranger));
      assert.equal(res.status, 401);
    }
    const locked = await tokenRequest(server, await assertionFor(APP.clientId, server.issuer, key));
    assert.equal(locked.status, 401);
    assert.equal(locked.body.error, "invalid_client");
    assert.match(locked.body.error_description, /too many failed client authentications/);
  });
});

describe("client assertions under the per-address budget", () => {
  let server: RunningServer;
  let key: Signer;
  const APP = { name: "by-address", clientId: "client-by-address", grantTypes: ["client_credentials"], tokenEndpointAuthMethod: "private_key_jwt" };

  before(async () => {
    key = await signer();
    server = await startTestServer({
      config: { applications: [TEST_APP, { ...APP, jwks: key.jwks }], users: [TEST_USER] },
      overrides: { clientAuthMaxFailures: 1000, clientAuthMaxFailuresPerIp: 3, clientAuthLockoutSeconds: 300 },
    });
  });
  after(() => server.close());

  it("counts failed assertions naming any client_id against the address, and then refuses a valid one from it", async () => {
    const stranger = await signer();
    for (const clientId of ["client-a", "client-b", APP.clientId]) {
      assert.equal((await tokenRequest(server, await assertionFor(clientId, server.issuer, stranger))).status, 401);
    }
    const locked = await tokenRequest(server, await assertionFor(APP.clientId, server.issuer, key));
    assert.equal(locked.status, 401);
    assert.match(locked.body.error_description, /too many failed client authentications/);
  });
});

describe("client assertions: jwksUri, registration and gRPC", () => {
  let server: RunningServer;
  let apps: Client<typeof ApplicationAdminService>;
  const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

  before(async () => {
    server = await startTestServer();
    apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
  });
  after(() => server.close());

  const refusedField = (call: Promise<unknown>, field: RegExp) =>
    call.then(
      () => assert.fail("the call must be refused"),
      (err: unknown) => assert.match(ConnectError.from(err).rawMessage, field),
    );

  it("registers private_key_jwt with jwks or an https jwksUri, and refuses a jwksUri on this machine or over http, a private key, or neither", async () => {
    const key = await signer();
    const created = await apps.createApplication({ application: { name: "pkj-rpc", tokenEndpointAuthMethod: "private_key_jwt", jwks: JSON.stringify(key.jwks), grantTypes: ["client_credentials"] } }, admin);
    assert.equal(created.application?.tokenEndpointAuthMethod, "private_key_jwt");
    assert.deepEqual(JSON.parse(created.application!.jwks), key.jwks);
    const clientId = created.application!.clientId;
    assert.equal((await tokenRequest(server, await assertionFor(clientId, server.issuer, key))).status, 200);

    await refusedField(apps.createApplication({ application: { name: "pkj-none", tokenEndpointAuthMethod: "private_key_jwt" } }, admin), /jwks: private_key_jwt needs/);
    await refusedField(apps.createApplication({ application: { name: "pkj-local", tokenEndpointAuthMethod: "private_key_jwt", jwksUri: "https://127.0.0.1:8443/jwks" } }, admin), /jwksUri: targets a loopback/);
    await refusedField(apps.createApplication({ application: { name: "pkj-http", tokenEndpointAuthMethod: "private_key_jwt", jwksUri: "http://keys.example/jwks" } }, admin), /jwksUri: must use https/);
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    await refusedField(apps.createApplication({ application: { name: "pkj-private", tokenEndpointAuthMethod: "private_key_jwt", jwks: JSON.stringify({ keys: [await exportJWK(privateKey)] }) } }, admin), /jwks: must hold public keys only/);
    await refusedField(apps.createApplication({ application: { name: "csb-jwks", jwks: JSON.stringify(key.jwks) } }, admin), /jwks: is only for/);
  });

  it("calls no private address for a jwksUri that resolves to one: invalid_client, nothing fetched", async () => {
    const key = await signer();
    // Stored past validation (as if the name had rebound since): the fetch itself must refuse it.
    const created = await apps.createApplication({ application: { name: "pkj-uri", tokenEndpointAuthMethod: "private_key_jwt", jwksUri: "https://keys.example/jwks", grantTypes: ["client_credentials"] } }, admin);
    const stored = (await server.store.applications.findByName("pkj-uri"))!;
    let connections = 0;
    const listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    try {
      const port = (listener.address() as AddressInfo).port;
      for (const uri of [`https://localhost:${port}/jwks`, `https://127.0.0.1:${port}/jwks`]) {
        await server.store.applications.update({ ...stored, jwksUri: uri }, stored);
        const res = await tokenRequest(server, await assertionFor(created.application!.clientId, server.issuer, key));
        assert.equal(res.status, 401, uri);
        assert.equal(res.body.error, "invalid_client", uri);
      }
      assert.equal(connections, 0, "no connection reached this machine");
    } finally {
      listener.close();
    }
  });

  it("turns an application to client_secret_jwt with a new secret, returned once and never listed sealed", async () => {
    const created = await apps.createApplication({ application: { name: "csj-rpc", grantTypes: ["client_credentials"] } }, admin);
    const updated = await apps.updateApplication({ application: { name: "csj-rpc", tokenEndpointAuthMethod: "client_secret_jwt" } }, admin);
    assert.ok(updated.clientSecret && updated.clientSecret !== created.clientSecret, "a secret only hashed before cannot key HS256: a new one");
    const listed = JSON.stringify(await apps.getApplication({ name: "csj-rpc" }, admin), (_k, v) => (typeof v === "bigint" ? String(v) : v));
    assert.equal(listed.includes(updated.clientSecret), false);
    assert.ok(!("clientSecretSealed" in updated.application!));
    const config = await oidc.discovery(new URL(server.issuer), created.application!.clientId, undefined, oidc.ClientSecretJwt(updated.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    assert.ok((await oidc.clientCredentialsGrant(config)).access_token);
    await refusedField(apps.updateApplication({ application: { name: "csj-rpc", clientSecret: "sixteen-chars-ok" } }, admin), /clientSecret: must be at least 32/);
  });

  it("takes the assertion in the gRPC request message at Token, Introspect and Revoke (grpc-js)", async () => {
    const key = await signer();
    const created = await apps.createApplication({ application: { name: "pkj-grpc", tokenEndpointAuthMethod: "private_key_jwt", jwks: JSON.stringify(key.jwks), grantTypes: ["client_credentials"] } }, admin);
    const clientId = created.application!.clientId;
    const grpc = new GrpcCaller(server.url);
    try {
      const auth = async () => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: await assertionFor(clientId, server.issuer, key) });
      const tokens = await grpc.call("TokenService", "Token", { grant_type: "client_credentials", ...(await auth()) });
      assert.ok(tokens.access_token);
      assert.equal((await grpc.call("IntrospectionService", "Introspect", { token: tokens.access_token, ...(await auth()) })).active, true);
      await grpc.call("IntrospectionService", "Revoke", { token: tokens.access_token, ...(await auth()) });
      assert.equal((await grpc.call("IntrospectionService", "Introspect", { token: tokens.access_token, ...(await auth()) })).active, false);
      const replayed = await auth();
      await grpc.call("TokenService", "Token", { grant_type: "client_credentials", ...replayed });
      const err = await grpc.call("TokenService", "Token", { grant_type: "client_credentials", ...replayed }).then(() => undefined, (e: unknown) => e);
      assert.equal(oauthErrorOf(err), "invalid_client");
    } finally {
      grpc.close();
    }
  });
});
