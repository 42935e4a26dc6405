import assert from "node:assert/strict";
import { createHash, createPublicKey, X509Certificate } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import { ApplicationAdminService, KeyAdminService } from "../../gen/identity/v1/admin_pb.js";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import type { RunningServer } from "../../src/app/server.js";
import { SIGNING_ALGS, type SigningAlg } from "../../src/shared/model.js";
import { FakeClock } from "../support/clock.js";
import { describePostgres, freshPostgresSchema } from "../support/databases.js";
import { getJson, INTROSPECT_PATH, TOKEN_PATH } from "../support/oauth.js";
import { connectClients } from "../support/rpc.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 28 §1: an application's signingAlg (RS256, PS256, ES256, EdDSA)
 * signs its ID tokens and JWT access tokens, each with a key of that
 * algorithm made when first needed, published in the JWKS and rotated on
 * its own.
 */
const ACTIVATION_DELAY_S = 600;
const RELOAD_S = 10;

const appFor = (alg: SigningAlg) => ({ ...TEST_APP, name: `app-${alg}`, clientId: `client-${alg}`, clientSecret: `secret-of-client-${alg}`, signingAlg: alg });

/** The at_hash a relying party computes: left half of the alg's hash (SHA-512 for Ed25519). */
function expectedAtHash(accessToken: string, alg: SigningAlg): string {
  const digest = createHash(alg === "EdDSA" ? "sha512" : "sha256").update(accessToken, "ascii").digest();
  return digest.subarray(0, digest.length / 2).toString("base64url");
}

/** Verify with only what the server publishes: a fresh remote JWKS each time, at the fake time. */
async function verify(server: RunningServer, token: string, clock: FakeClock) {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks`));
  return jwtVerify(token, jwks, { currentDate: new Date(clock.now()) });
}

async function verifies(server: RunningServer, token: string, clock: FakeClock): Promise<boolean> {
  return verify(server, token, clock).then(
    () => true,
    () => false,
  );
}

async function publishedKeys(server: RunningServer): Promise<JSONWebKeySet["keys"]> {
  const res = await fetch(`${server.url}/.well-known/jwks`);
  assert.equal(res.status, 200);
  return ((await res.json()) as JSONWebKeySet).keys;
}

function admin(server: RunningServer) {
  const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const keys = createClient(KeyAdminService, transport);
  const apps = createClient(ApplicationAdminService, transport);
  return {
    rotate: (alg: string) => keys.rotateKey({ alg }, { headers }),
    list: () => keys.listKeys({}, { headers }),
    export: (alg: string) => keys.exportKey({ alg }, { headers }),
    apps,
    headers,
  };
}

function clientCredentials(server: RunningServer, alg: SigningAlg) {
  const app = appFor(alg);
  return postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials", client_id: app.clientId, client_secret: app.clientSecret });
}

function password(server: RunningServer, alg: SigningAlg) {
  const app = appFor(alg);
  return postForm(server.url + TOKEN_PATH, {
    grant_type: "password", client_id: app.clientId, client_secret: app.clientSecret,
    username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile",
  });
}

describe("signing algorithms per application (RS256, PS256, ES256, EdDSA)", () => {
  let server: RunningServer;
  const clock = new FakeClock();

  before(async () => {
    server = await startTestServer({
      clock,
      config: { applications: [TEST_APP, ...SIGNING_ALGS.map(appFor)], users: [TEST_USER] },
      overrides: { keyActivationDelaySeconds: ACTIVATION_DELAY_S },
    });
  });
  after(() => server.close());

  for (const alg of SIGNING_ALGS) {
    it(`${alg}: every token verifies against the published JWKS alone, over REST and gRPC, and introspection, userinfo and the certificate work`, async () => {
      const app = appFor(alg);
      const cc = await clientCredentials(server, alg);
      assert.equal(cc.status, 200, JSON.stringify(cc.body));
      const pw = await password(server, alg);
      assert.equal(pw.status, 200, JSON.stringify(pw.body));
      const viaGrpc = await connectClients(TokenService, server.url).grpc.token({
        grantType: "password", clientId: app.clientId, clientSecret: app.clientSecret, username: TEST_USER.name, password: TEST_USER.password, scope: "openid",
      });

      for (const token of [cc.body.access_token, pw.body.access_token, pw.body.id_token, viaGrpc.accessToken, viaGrpc.idToken]) {
        const { protectedHeader, payload } = await verify(server, token, clock);
        assert.equal(protectedHeader.alg, alg);
        assert.equal(payload.aud, app.clientId);
        const published = (await publishedKeys(server)).find((k) => k.kid === protectedHeader.kid);
        assert.equal(published?.alg, alg);
        assert.equal(published?.use, "sig");
        assert.equal(published?.d, undefined, "no private part is published");
      }
      const idClaims = (await verify(server, pw.body.id_token, clock)).payload;
      assert.equal(idClaims.at_hash, expectedAtHash(pw.body.access_token, alg));
      assert.equal((await verify(server, viaGrpc.idToken, clock)).payload.at_hash, expectedAtHash(viaGrpc.accessToken, alg));

      const introspected = await postForm(server.url + INTROSPECT_PATH, { token: pw.body.access_token }, { authorization: basicAuth(app.clientId, app.clientSecret) });
      assert.equal(introspected.body.active, true);
      const userinfo = await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${pw.body.access_token}` });
      assert.equal(userinfo.status, 200);
      assert.equal(userinfo.body.sub, idClaims.sub);
      const account = await getJson(`${server.url}/api/get-account`, { authorization: `Bearer ${pw.body.access_token}` });
      assert.equal(account.status, 200);

      const discovery = await getJson(`${server.url}/.well-known/openid-configuration`);
      assert.ok(discovery.body.id_token_signing_alg_values_supported.includes(alg));

      // The certificate the Casdoor SDK reads: a self-signed X.509 around the key that signs for this alg.
      const exported = await admin(server).export(alg);
      assert.equal(exported.kid, decodeProtectedHeader(pw.body.access_token).kid);
      const cert = new X509Certificate(exported.certificatePem);
      assert.ok(cert.verify(cert.publicKey));
      const jwk = (await publishedKeys(server)).find((k) => k.kid === exported.kid)!;
      assert.ok(cert.publicKey.equals(createPublicKey({ key: jwk as import("node:crypto").JsonWebKey, format: "jwk" })));
    });
  }

  it("lists in discovery every algorithm an application may sign with, and refuses an unknown alg", async () => {
    const discovery = await getJson(`${server.url}/.well-known/openid-configuration`);
    assert.deepEqual(discovery.body.id_token_signing_alg_values_supported, [...SIGNING_ALGS]);
    const { apps, headers } = admin(server);
    const refused = await apps.createApplication({ application: { name: "bad-alg", signingAlg: "HS256" } }, { headers }).then(
      () => undefined,
      (err: Error) => err,
    );
    assert.match(String(refused?.message), /signingAlg: is not one of RS256, PS256, ES256, EdDSA/);
    assert.match(String(await admin(server).rotate("none").catch((err: Error) => err.message)), /alg: is not one of/);
    const created = await apps.createApplication({ application: { name: "rpc-es", signingAlg: "ES256" } }, { headers });
    assert.equal(created.application?.signingAlg, "ES256");
    const plain = await apps.createApplication({ application: { name: "rpc-default" } }, { headers });
    assert.equal(plain.application?.signingAlg, "RS256");
  });

  for (const alg of SIGNING_ALGS) {
    it(`${alg}: a rotation keeps the old key's tokens verifiable through the overlap, leaves other algorithms alone, then retires it`, async () => {
      const before = await password(server, alg);
      const oldKid = decodeProtectedHeader(before.body.access_token).kid!;
      const otherAlg = alg === "RS256" ? "ES256" : "RS256";
      const otherKid = decodeProtectedHeader((await clientCredentials(server, otherAlg)).body.access_token).kid;

      const { key } = await admin(server).rotate(alg);
      assert.equal(key?.alg, alg);
      assert.equal(key?.signing, false);
      const newKid = key!.kid;
      assert.ok((await publishedKeys(server)).some((k) => k.kid === newKid), "published at once");
      assert.equal(decodeProtectedHeader((await password(server, alg)).body.access_token).kid, oldKid, "not signing before the delay");

      clock.advanceSeconds(ACTIVATION_DELAY_S);
      const after = await password(server, alg);
      assert.equal(decodeProtectedHeader(after.body.access_token).kid, newKid);
      assert.equal(decodeProtectedHeader(after.body.id_token).kid, newKid);
      assert.equal(decodeProtectedHeader((await clientCredentials(server, otherAlg)).body.access_token).kid, otherKid, "another algorithm keeps its key");
      assert.ok(await verifies(server, before.body.access_token, clock), "an old access token verifies in the overlap");
      assert.ok(await verifies(server, before.body.id_token, clock), "an old ID token verifies in the overlap");
      const listed = (await admin(server).list()).keys;
      assert.equal(listed.find((k) => k.kid === newKid)?.signing, true);
      assert.equal(listed.find((k) => k.kid === otherKid)?.signing, true);

      // Once every token of the old key has expired (1 h), it is retired within a reload.
      clock.advanceSeconds(3600 + RELOAD_S + 1);
      const kids = (await publishedKeys(server)).map((k) => k.kid);
      assert.ok(!kids.includes(oldKid), "retired");
      assert.ok(kids.includes(newKid));
    });
  }
});

/** Two instances on one database: the first tokens of an algorithm, at once on both, make one key. */
async function oneFirstKey(database: string): Promise<void> {
  const clock = new FakeClock();
  const config = { applications: [appFor("ES256")], users: [TEST_USER] };
  const a = await startTestServer({ clock, database, config });
  const b = await startTestServer({ clock, database, config });
  try {
    const answers = await Promise.all([a, b, a, b].map((s) => clientCredentials(s, "ES256")));
    const kids = new Set(answers.map((r) => decodeProtectedHeader(r.body.access_token).kid));
    assert.equal(kids.size, 1, "one ES256 key");
    const keys = await a.domain.keys.list();
    assert.equal(keys.filter((k) => k.alg === "ES256").length, 1);
    for (const r of answers) assert.ok(await verifies(b, r.body.access_token, clock));
  } finally {
    await a.close();
    await b.close();
  }
}

describe("the first key of an algorithm, across instances", () => {
  it("is made once on SQLite", async () => {
    await oneFirstKey(join(mkdtempSync(join(tmpdir(), "identity-algs-")), "db.sqlite"));
  });

  describePostgres("on PostgreSQL", () => {
    it("is made once", async () => {
      const schema = freshPostgresSchema();
      try {
        await oneFirstKey(schema.url);
      } finally {
        await schema.drop();
      }
    });
  });
});

describe("signing algorithms from the CLI", () => {
  it("sets an application's --signing-alg and rotates one algorithm's key with keys rotate --alg", async () => {
    const database = join(mkdtempSync(join(tmpdir(), "identity-algs-cli-")), "cli.db");
    const env = {};
    const created = JSON.parse(await runAdminCommand("app", ["create", "--name", "cli-app", "--signing-alg", "EdDSA", "--database", database], env));
    assert.equal(created.signingAlg, "EdDSA");
    const updated = JSON.parse(await runAdminCommand("app", ["update", "--name", "cli-app", "--signing-alg", "PS256", "--database", database], env));
    assert.equal(updated.signingAlg, "PS256");
    await assert.rejects(runAdminCommand("app", ["update", "--name", "cli-app", "--signing-alg", "HS256", "--database", database], env), /signingAlg/);

    const rotated = JSON.parse(await runAdminCommand("keys", ["rotate", "--alg", "ES256", "--database", database], env));
    assert.equal(rotated.alg, "ES256");
    const listed = JSON.parse(await runAdminCommand("keys", ["list", "--database", database], env)) as { kid: string; alg: string; state: string }[];
    // The first key of ES256 signs at once: no key of it was published before.
    assert.equal(listed.find((k) => k.kid === rotated.kid)?.state, "signing");
    assert.equal(listed.find((k) => k.alg === "RS256")?.state, "signing");
    const exported = await runAdminCommand("keys", ["export", "--alg", "ES256", "--database", database], env);
    assert.match(exported, new RegExp(`# kid ${rotated.kid}\\n-----BEGIN PUBLIC KEY-----[\\s\\S]+-----BEGIN CERTIFICATE-----`));
    await assert.rejects(runAdminCommand("keys", ["rotate", "--alg", "HS256", "--database", database], env), /alg: is not one of/);
  });
});
