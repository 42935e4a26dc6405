import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { isPostgres, type Db } from "../../src/store/db.js";
import { authorizeUrl, browse, signIn } from "../support/browserless.js";
import { passwordTokens } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describe("secrets at rest", () => {
  let server: RunningServer;
  before(async () => (server = await startTestServer({ config: { applications: [{ ...TEST_APP, refreshExpireInHours: 1 }], users: [TEST_USER] } })));
  after(() => server.close());

  it("never stores a token, code, session, client secret or password as it was handed out or given", async () => {
    const tokens = await passwordTokens(server, { scope: "openid profile" });
    const { location, jar } = await signIn(server);
    const code = location.searchParams.get("code")!;
    // A second code, left unredeemed, and the session that asked for it.
    const pending = new URL((await browse(authorizeUrl(server.url), jar)).headers.get("location")!).searchParams.get("code")!;
    const secrets = {
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token!,
      idToken: tokens.id_token!,
      code,
      pendingCode: pending,
      session: jar.get("identity_session")!,
      clientSecret: TEST_APP.clientSecret,
      password: TEST_USER.password,
    };
    for (const [name, value] of Object.entries(secrets)) assert.ok(value && value.length >= 8, name);

    const db = server.store.db;
    const tables = await tableNames(db);
    assert.ok(tables.includes("refresh_tokens") && tables.includes("sessions") && tables.includes("authorization_codes"), tables.join());
    let dump = "";
    for (const table of tables) dump += JSON.stringify(await db(table).select());
    for (const [name, value] of Object.entries(secrets)) assert.ok(!dump.includes(value), `${name} is stored in clear`);
  });
});

/** Every table of the server's database (its own schema, on PostgreSQL). */
async function tableNames(db: Db): Promise<string[]> {
  if (isPostgres(db)) {
    const result = await db.raw("select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'");
    return (result.rows as Array<{ name: string }>).map((t) => t.name);
  }
  return ((await db.raw("select name from sqlite_master where type = 'table'")) as Array<{ name: string }>).map((t) => t.name);
}
