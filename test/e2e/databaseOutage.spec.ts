import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { describePostgres, freshPostgresSchema, POSTGRES_URL, type PostgresSchema } from "../support/databases.js";
import { Relay } from "../support/tcpRelay.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describePostgres("the database goes away", () => {
  let schema: PostgresSchema;
  let relay: Relay;
  let server: RunningServer;

  before(async () => {
    schema = freshPostgresSchema();
    const target = new URL(POSTGRES_URL!);
    relay = new Relay({ host: target.hostname, port: Number(target.port || 5432) });
    await relay.start();
    const viaRelay = new URL(schema.url);
    viaRelay.port = String(relay.port);
    server = await startTestServer({ database: viaRelay.toString(), overrides: { dbConnectTimeoutMs: 1000 } });
  });

  after(async () => {
    await server?.close();
    await relay?.stop();
    await schema?.drop();
  });

  const passwordGrant = () =>
    postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
    );

  it("answers 503 temporarily_unavailable with Retry-After at once, and recovers when it is back", async () => {
    assert.equal((await passwordGrant()).status, 200);

    await relay.stop();
    const rest = await passwordGrant();
    assert.equal(rest.status, 503);
    assert.equal(rest.body.error, "temporarily_unavailable");
    assert.ok(Number(rest.headers.get("retry-after")) > 0);

    const connect = await fetch(`${server.url}/identity.v1.IntrospectionService/Introspect`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
      body: JSON.stringify({ token: "a.b.c" }),
    });
    assert.equal(connect.status, 503);
    assert.equal(((await connect.json()) as { code: string }).code, "unavailable");

    await relay.start();
    assert.equal((await passwordGrant()).status, 200);
  });
});
