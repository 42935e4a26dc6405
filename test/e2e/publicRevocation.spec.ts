import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import type { RunningServer } from "../../src/app/server.js";
import { consoleSignIn } from "../support/consoleSignIn.js";
import { describeEachDatabase } from "../support/databases.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { getJson, isActive, passwordTokens, refresh } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const APP = { ...TEST_APP, refreshExpireInHours: 24 };
const REVOKE_PATH = "/api/login/oauth/revoke";

/**
 * RFC 7009 §2.1: a public client (the console's application, which has no
 * secret anybody knows) revokes its own tokens with its client_id alone; a
 * confidential client still has to authenticate.
 */
describeEachDatabase("revocation by a public client (RFC 7009 §2.1)", (db) => {
  let server: RunningServer;
  before(async () => (server = await startTestServer({ database: db.url, config: { applications: [APP], users: [TEST_USER] } })));
  after(() => server?.close());

  const consoleId = () => server.domain.console.clientId;

  /** What the console sends at sign-out: oauth4webapi, client auth None; processRevocationResponse insists on a 200. */
  async function revokeAsConsole(token: string): Promise<void> {
    const as: oauth.AuthorizationServer = { issuer: server.issuer, revocation_endpoint: server.url + REVOKE_PATH };
    const response = await oauth.revocationRequest(as, { client_id: consoleId() }, oauth.None(), token, {
      additionalParameters: { token_type_hint: "access_token" },
      [oauth.allowInsecureRequests]: true,
    });
    await oauth.processRevocationResponse(response);
  }

  const revokedEvents = async () => {
    await server.store.auditWriter.flush();
    return (await server.domain.auditEvents({ event: "token_revoked", clientId: consoleId(), pageSize: 100 })).events;
  };

  it("lets the console revoke its own access token with its client_id alone: introspection then says inactive", async () => {
    const tokens = await consoleSignIn(server, TEST_USER);
    assert.equal(await isActive(server, tokens.access_token), true);
    const before = (await revokedEvents()).length;
    await revokeAsConsole(tokens.access_token);
    assert.equal(await isActive(server, tokens.access_token), false);
    assert.equal((await getJson(`${server.url}/api/userinfo?accessToken=${tokens.access_token}`)).status, 401);
    const events = await revokedEvents();
    assert.equal(events.length, before + 1);
    assert.deepEqual([events[0]!.outcome, events[0]!.actor?.name, events[0]!.details?.tokenType], ["success", consoleId(), "access_token"]);
  });

  it("leaves another client's tokens alone, answering 200 as for any token", async () => {
    const tokens = await passwordTokens(server, { client: APP });
    const before = (await revokedEvents()).length;
    await revokeAsConsole(tokens.access_token);
    await revokeAsConsole(tokens.refresh_token!);
    await revokeAsConsole("no-such-token");
    assert.equal(await isActive(server, tokens.access_token), true);
    assert.equal((await refresh(server, tokens.refresh_token!, {}, APP)).status, 200);
    assert.equal((await revokedEvents()).length, before);
  });

  it("does not let a confidential client revoke the console's token either", async () => {
    const tokens = await consoleSignIn(server, TEST_USER);
    const res = await postForm(server.url + REVOKE_PATH, { token: tokens.access_token }, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
    assert.equal(res.status, 200);
    assert.equal(await isActive(server, tokens.access_token), true);
  });

  it("refuses a confidential client's client_id without its secret (401 invalid_client), and its token stays valid", async () => {
    const tokens = await passwordTokens(server, { client: APP });
    const url = server.url + REVOKE_PATH;
    for (const [fields, headers] of [
      [{ token: tokens.access_token, client_id: APP.clientId }, {}],
      [{ token: tokens.access_token }, { authorization: basicAuth(APP.clientId, "") }],
      [{ token: tokens.access_token, client_id: "no-such-client" }, {}],
    ] as const) {
      const res = await postForm(url, fields, headers);
      assert.equal(res.status, 401, JSON.stringify(fields));
      assert.equal(res.body.error, "invalid_client");
    }
    assert.equal(await isActive(server, tokens.access_token), true);
  });

  it("refuses the console's client_id with a secret, which no secret can match", async () => {
    const tokens = await consoleSignIn(server, TEST_USER);
    const res = await postForm(server.url + REVOKE_PATH, { token: tokens.access_token, client_id: consoleId(), client_secret: "guess" });
    assert.equal(res.status, 401);
    assert.equal(res.body.error, "invalid_client");
    assert.equal(await isActive(server, tokens.access_token), true);
  });

  it("serves the same over gRPC: the console's client_id alone revokes, a confidential one's is refused", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const own = await consoleSignIn(server, TEST_USER);
      await grpc.call("IntrospectionService", "Revoke", { token: own.access_token, client_id: consoleId() });
      assert.equal(await isActive(server, own.access_token), false);
      const other = await passwordTokens(server, { client: APP });
      await assert.rejects(
        grpc.call("IntrospectionService", "Revoke", { token: other.access_token, client_id: APP.clientId }),
        (err) => oauthErrorOf(err) === "invalid_client",
      );
      assert.equal(await isActive(server, other.access_token), true);
    } finally {
      grpc.close();
    }
  });

  it("lists none among the revocation endpoint's auth methods", async () => {
    const doc = (await getJson(`${server.url}/.well-known/openid-configuration`)).body;
    assert.deepEqual(doc.revocation_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"]);
  });
});
