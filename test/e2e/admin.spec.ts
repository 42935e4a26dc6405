import assert from "node:assert/strict";
import { createPublicKey, X509Certificate } from "node:crypto";
import { toJsonString, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { decodeProtectedHeader } from "jose";
import {
  ApplicationAdminService,
  GetApplicationResponseSchema,
  GetUserResponseSchema,
  KeyAdminService,
  ListApplicationsResponseSchema,
  UserAdminService,
} from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { call, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP } from "../support/server.js";

async function connectCode(promise: Promise<unknown>): Promise<Code> {
  return promise.then(
    () => assert.fail("the call must be refused"),
    (err: unknown) => ConnectError.from(err).code,
  );
}

/** The message as it travels, to show what is (not) in it. */
const wire = <D extends DescMessage>(schema: D, message: MessageShape<D>) => toJsonString(schema, message);

describe("admin RPCs", () => {
  describe("with no admin token configured", () => {
    let server: RunningServer;
    before(async () => (server = await startTestServer({ config: {}, overrides: { adminToken: undefined } })));
    after(() => server.close());

    it("take no admin token: it is just an unknown bearer token (admin users' tokens: adminScope.spec.ts)", async () => {
      const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
      const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
      assert.equal(await connectCode(createClient(ApplicationAdminService, transport).listApplications({}, { headers })), Code.Unauthenticated);
      assert.equal(await connectCode(createClient(UserAdminService, transport).listUsers({}, { headers })), Code.Unauthenticated);
      assert.equal(await connectCode(createClient(KeyAdminService, transport).rotateKey({}, { headers })), Code.Unauthenticated);
      assert.equal((await server.domain.keys.list()).length, 1, "nothing happened");
    });
  });

  describe("with an admin token", () => {
    let server: RunningServer;
    let apps: Client<typeof ApplicationAdminService>;
    let users: Client<typeof UserAdminService>;
    let keys: Client<typeof KeyAdminService>;
    const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
    const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));

    before(async () => {
      // The activation delay has its own test (keyRotation.spec.ts); here a rotated key signs at once.
      server = await startTestServer({ overrides: { keyActivationDelaySeconds: 0 } });
      const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
      apps = createClient(ApplicationAdminService, transport);
      users = createClient(UserAdminService, transport);
      keys = createClient(KeyAdminService, transport);
    });
    after(() => server.close());

    const clientCredentials = (clientId: string, secret: string) =>
      postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, { authorization: basicAuth(clientId, secret) });

    it("refuse a missing or wrong token as unauthenticated", async () => {
      assert.equal(await connectCode(apps.listApplications({})), Code.Unauthenticated);
      assert.equal(await connectCode(apps.listApplications({}, { headers: { authorization: "Bearer wrong" } })), Code.Unauthenticated);
      assert.equal(await connectCode(users.listUsers({}, { headers: { authorization: `Basic ${ADMIN_TOKEN}` } })), Code.Unauthenticated);
      assert.equal(await connectCode(keys.rotateKey({}, { headers: { authorization: `Bearer ${ADMIN_TOKEN}x` } })), Code.Unauthenticated);
    });

    it("manage an application; a generated secret is returned once and works", async () => {
      const created = await apps.createApplication({ application: { name: "svc", grantTypes: ["client_credentials"] } }, admin);
      const app = created.application!;
      assert.match(created.clientSecret, /^[A-Za-z0-9_-]{22,}$/, "at least 128 bits");
      assert.match(app.clientId, /^[A-Za-z0-9_-]{22,}$/);
      assert.deepEqual(app.grantTypes, ["authorization_code", "client_credentials"], "authorization_code is always on");
      assert.equal(app.expireInHours, 1);
      assert.equal(app.refreshExpireInHours, 0);
      assert.ok(nowSeconds() - app.createdTime <= 5n, "times are epoch seconds");
      assert.equal((await clientCredentials(app.clientId, created.clientSecret)).status, 200);

      const read = await apps.getApplication({ name: "svc" }, admin);
      const listed = await apps.listApplications({}, admin);
      assert.deepEqual(listed.applications.map((a) => a.name).sort(), ["app1", "svc"]);
      for (const text of [wire(GetApplicationResponseSchema, read), wire(ListApplicationsResponseSchema, listed)]) {
        assert.ok(!text.includes(created.clientSecret) && !text.includes(TEST_APP.clientSecret) && !text.includes("scrypt"), text);
      }

      const untouched = await apps.updateApplication({ application: { name: "svc", expireInHours: 2 } }, admin);
      assert.equal(untouched.clientSecret, "", "no new secret, none returned");
      assert.equal(untouched.application?.expireInHours, 2);
      assert.deepEqual(untouched.application?.grantTypes, app.grantTypes, "unset lists are kept");

      const rotated = await apps.updateApplication({ application: { name: "svc", clientSecret: "a-new-secret-for-svc" } }, admin);
      assert.equal(rotated.clientSecret, "a-new-secret-for-svc");
      assert.equal((await clientCredentials(app.clientId, created.clientSecret)).status, 401);
      const renewed = await clientCredentials(app.clientId, "a-new-secret-for-svc");
      assert.equal(renewed.body.expires_in, 7200);

      await apps.deleteApplication({ name: "svc" }, admin);
      assert.equal(await connectCode(apps.getApplication({ name: "svc" }, admin)), Code.NotFound);
      assert.equal((await clientCredentials(app.clientId, "a-new-secret-for-svc")).status, 401);
    });

    it("reject bad application input, naming the field", async () => {
      const err = await apps.createApplication({ application: { name: "bad", redirectUris: ["not a url"] } }, admin).catch((e: unknown) => ConnectError.from(e));
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.InvalidArgument);
      assert.match(err.rawMessage, /redirectUris/);
      assert.equal(await connectCode(apps.createApplication({ application: { name: "app1" } }, admin)), Code.AlreadyExists);
      assert.equal(await connectCode(apps.createApplication({ application: { name: "x", grantTypes: ["saml2_bearer"] } }, admin)), Code.InvalidArgument);
    });

    it("manage a user without ever returning the password or its hash", async () => {
      const created = await users.createUser({ user: { name: "bob", password: "pw-bob-456", displayName: "Bob", email: "bob@example.com" } }, admin);
      assert.equal(created.user?.name, "bob");
      assert.ok(created.user?.id);
      const login = (password: string) =>
        postForm(server.url + TOKEN_PATH, { grant_type: "password", username: "bob", password }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
      assert.equal((await login("pw-bob-456")).status, 200);

      const read = await users.getUser({ name: "bob" }, admin);
      const text = wire(GetUserResponseSchema, read);
      assert.ok(!text.includes("pw-bob-456") && !text.includes("scrypt"), text);
      assert.equal(read.user?.email, "bob@example.com");

      const disabled = await users.updateUser({ user: { name: "bob", disabled: true } }, admin);
      assert.equal(disabled.user?.disabled, true);
      assert.equal(disabled.user?.displayName, "Bob", "unset fields are left alone");
      assert.equal((await login("pw-bob-456")).body.error, "invalid_grant");

      assert.deepEqual((await users.listUsers({}, admin)).users.map((u) => u.name).sort(), ["alice", "bob"]);
      await users.deleteUser({ name: "bob" }, admin);
      assert.equal(await connectCode(users.getUser({ name: "bob" }, admin)), Code.NotFound);
      assert.equal(await connectCode(users.createUser({ user: { name: "x", email: "not-an-email" } }, admin)), Code.InvalidArgument);
    });

    it("rotate and export signing keys", async () => {
      const before = await keys.listKeys({}, admin);
      assert.equal(before.keys.length, 1);
      assert.equal(before.keys[0]!.signing, true);
      assert.equal(before.keys[0]!.alg, "RS256");

      const { key } = await keys.rotateKey({}, admin);
      assert.ok(key?.signing);
      assert.ok(nowSeconds() - key.activeFrom <= 5n, "times are epoch seconds");
      const after = await keys.listKeys({}, admin);
      assert.deepEqual(after.keys.map((k) => [k.kid, k.signing]), [[key.kid, true], [before.keys[0]!.kid, false]]);

      // New tokens are signed with the new key; both keys stay published.
      const token = (await clientCredentials(TEST_APP.clientId, TEST_APP.clientSecret)).body.access_token;
      assert.equal(decodeProtectedHeader(token).kid, key.kid);
      const jwks = (await call(`${server.url}/.well-known/jwks`)).body;
      assert.deepEqual(jwks.keys.map((k: { kid: string }) => k.kid).sort(), [key.kid, before.keys[0]!.kid].sort());

      const exported = await keys.exportKey({}, admin);
      assert.equal(exported.kid, key.kid);
      const certificate = new X509Certificate(exported.certificatePem);
      assert.ok(certificate.publicKey.equals(createPublicKey(exported.publicKeyPem)));
      const published = jwks.keys.find((k: { kid: string }) => k.kid === key.kid);
      assert.ok(createPublicKey({ key: published, format: "jwk" }).equals(createPublicKey(exported.publicKeyPem)));
      assert.equal((await keys.exportKey({ kid: before.keys[0]!.kid }, admin)).kid, before.keys[0]!.kid);
      assert.equal(await connectCode(keys.exportKey({ kid: "no-such-kid" }, admin)), Code.NotFound);
    });
  });
});
