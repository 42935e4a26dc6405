import assert from "node:assert/strict";
import net from "node:net";
import type { RunningServer } from "../../src/app/server.js";
import { describePostgres, freshPostgresSchema, POSTGRES_URL, type PostgresSchema } from "../support/databases.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** A TCP relay to PostgreSQL that the test can cut and restore, standing in for a database outage. */
class Relay {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    this.server = net.createServer((inbound) => {
      const outbound = net.connect(this.target);
      for (const socket of [inbound, outbound]) {
        this.sockets.add(socket);
        socket.on("error", () => {});
        socket.once("close", () => this.sockets.delete(socket));
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Drop every connection and refuse new ones. */
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

describePostgres("the database goes away", () => {
  let schema: PostgresSchema;
  let relay: Relay;
  let server: RunningServer;

  before(async () => {
    schema = freshPostgresSchema();
    const target = new URL(POSTGRES_URL!);
    relay = new Relay({ host: target.hostname, port: Number(target.port || 5432) });
    await relay.open();
    const viaRelay = new URL(schema.url);
    viaRelay.port = String(relay.port);
    server = await startTestServer({ database: viaRelay.toString(), overrides: { dbConnectTimeoutMs: 1000 } });
  });

  after(async () => {
    await server?.close();
    await relay?.cut();
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

    await relay.cut();
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

    await relay.open();
    assert.equal((await passwordGrant()).status, 200);
  });
});
