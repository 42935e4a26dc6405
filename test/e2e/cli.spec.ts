import { generateKeyPairSync } from "node:crypto";
import assert from "node:assert/strict";
import { createPublicKey, X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService, KeyAdminService } from "../../gen/identity/v1/admin_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import { runBackupCommand, runMigrateCommand } from "../../src/app/maintenance.js";
import { openDb } from "../../src/store/db.js";
import { createStore } from "../../src/store/index.js";
import { cleanEnv, ensureBuilt, runCli } from "../support/cli.js";
import { freshSharedTestDatabase, type FreshDatabase } from "../support/databases.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, writeConfigFile } from "../support/server.js";

const LISTENING = /listening on http:\/\/127\.0\.0\.1:(\d+)/;

/** Split the banner's curl line the way a POSIX shell would (it only uses single quotes). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/(?:[^\s']+|'[^']*')+/g)].map(([word]) => word.replace(/'([^']*)'/g, "$1"));
}

/** Do what the printed curl command does: -u is Basic auth, each -d joins the form body verbatim. */
async function runCurlLine(line: string): Promise<Response> {
  const words = shellWords(line.trim());
  assert.equal(words[0], "curl");
  const data: string[] = [];
  let user = "";
  let url = "";
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === "-u") user = words[++i]!;
    else if (word === "-d") data.push(words[++i]!);
    else if (word.startsWith("http")) url = word;
    else assert.equal(word, "-s", `unexpected curl argument ${word}`);
  }
  return fetch(url, {
    method: "POST",
    headers: { authorization: `Basic ${Buffer.from(user).toString("base64")}`, "content-type": "application/x-www-form-urlencoded" },
    body: data.join("&"),
  });
}

describe("command line", function () {
  this.timeout(120_000); // covers a rebuild of dist/ when the sources are newer
  let dir: string;

  before(() => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), "identity-cli-"));
  });

  describe("serve", () => {
    let busy: net.Server;
    let busyPort: number;
    before(async () => {
      // A port that is taken: if PORT won over --port, the start would fail.
      busy = net.createServer().listen(0, "127.0.0.1");
      await new Promise((resolve) => busy.once("listening", resolve));
      busyPort = (busy.address() as net.AddressInfo).port;
    });
    after(() => busy.close());

    let demoSecret = "";

    it("first start: listens on the chosen port, prints the demo credentials and a curl that works", async () => {
      const cli = runCli(["serve", "--port", "0", "--database", join(dir, "serve.sqlite")], cleanEnv({ PORT: String(busyPort) }));
      try {
        const [, port] = await cli.waitFor(LISTENING);
        assert.notEqual(Number(port), busyPort, "--port beats PORT");
        const [curlLine] = await cli.waitFor(/^\s*curl .*$/m);
        const banner = cli.stdout();
        demoSecret = banner.match(/client_secret:\s+(\S+)/)![1]!;
        assert.match(banner, /client_id:\s+\S+/);
        assert.match(banner, /username:\s+demo/);
        assert.match(banner, /password:\s+\S+/);
        assert.ok(curlLine.includes(`http://127.0.0.1:${port}/api/login/oauth/access_token`));

        const res = await runCurlLine(curlLine);
        const body = (await res.json()) as Record<string, unknown>;
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.equal(body.token_type, "Bearer");
        assert.equal(body.scope, "openid profile email");
        assert.ok(body.id_token);
      } finally {
        cli.child.kill("SIGTERM");
      }
      assert.equal(await cli.exited, 0, "SIGTERM is a clean shutdown");
    });

    it("a later start on the same file prints nothing secret", async () => {
      assert.ok(demoSecret, "needs the first start");
      const cli = runCli(["serve", "--port", "0", "--database", join(dir, "serve.sqlite")], cleanEnv());
      await cli.waitFor(LISTENING);
      cli.child.kill("SIGTERM");
      assert.equal(await cli.exited, 0);
      assert.ok(!cli.stdout().includes(demoSecret));
      assert.doesNotMatch(cli.stdout(), /client_secret|password/);
    });

    it("a config file with an unknown field stops the start with exit 1, naming entry and field", async () => {
      const config = writeConfigFile({ applications: [{ ...TEST_APP, colour: "blue" }] });
      const cli = runCli(["serve", "--port", "0", "--database", ":memory:", "--config", config], cleanEnv());
      assert.equal(await cli.exited, 1);
      assert.match(cli.stderr(), /applications\[0\] \(app1\): colour: is not a known field/);
      assert.doesNotMatch(cli.stdout(), /listening/);
    });

    it("a config file with an invalid field stops the start, naming entry and field", async () => {
      // In-process: the same start-up path without paying for another process.
      const invalid = [
        { config: { users: [{ name: "bob", email: "bob-at-example" }] }, message: /users\[0\] \(bob\): email: / },
        { config: { applications: [{ name: "a", redirectUris: ["ftp://x"] }] }, message: /applications\[0\] \(a\): redirectUris: / },
        { config: { applications: [{ name: "a", expireInHours: -1 }] }, message: /applications\[0\] \(a\): expireInHours: / },
        { config: { providers: [{ name: "up", type: "Custom" }] }, message: /providers\[0\] \(up\): clientId: is required/ },
        { config: { apps: [] }, message: /apps: is not a known section/ },
      ];
      for (const { config, message } of invalid) {
        await assert.rejects(startTestServer({ config }), message);
      }
    });
  });

  describe("admin commands", () => {
    let database: string;
    const admin = (noun: string, ...args: string[]) => runAdminCommand(noun, [...args, "--database", database], {});
    const json = async (noun: string, ...args: string[]) => JSON.parse(await admin(noun, ...args));

    // A SQLite file, or a PostgreSQL schema under IDENTITY_TEST_DATABASE=postgres.
    let shared: FreshDatabase | undefined;
    before(() => {
      shared = freshSharedTestDatabase();
      database = shared.url;
    });
    after(() => shared?.dispose());

    it("app create|list|show|update|delete", async () => {
      const created = await json("app", "create", "--name", "cli-app", "--grant-type", "client_credentials", "--redirect-uri", "https://app.example/cb");
      assert.match(created.clientSecret, /^[A-Za-z0-9_-]{22,}$/, "a generated secret is printed once");
      assert.deepEqual(created.grantTypes, ["authorization_code", "client_credentials"]);
      assert.equal(created.clientSecretHash, undefined);

      const shown = await admin("app", "show", "--name", "cli-app");
      assert.ok(!shown.includes(created.clientSecret) && !shown.includes("scrypt"), shown);
      assert.equal(JSON.parse(shown).clientId, created.clientId);

      const updated = await json("app", "update", "--name", "cli-app", "--expire-in-hours", "3");
      assert.equal(updated.expireInHours, 3);
      assert.equal(updated.clientSecret, undefined);
      assert.deepEqual((await json("app", "list")).map((a: { name: string }) => a.name), ["cli-app"]);
      assert.deepEqual(await json("app", "delete", "--name", "cli-app"), { deleted: "cli-app" });
      await assert.rejects(admin("app", "show", "--name", "cli-app"), /no application named cli-app/);
      await assert.rejects(admin("app", "create", "--name", "x", "--expire-in-hours", "soon"), /expireInHours/);
    });

    it("app create|update with signed-assertion authentication and token exchange (issue 44): the fields the RPCs set, never a secret", async () => {
      const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: "jwk" }), kid: "k1", alg: "ES256", use: "sig" }] });
      const created = await json(
        "app", "create", "--name", "jwt-app", "--grant-type", "client_credentials", "--token-endpoint-auth-method", "private_key_jwt", "--jwks", jwks,
        "--exchange-audience", "client-b", "--exchange-audience", "https://api.example", "--allow-impersonation",
        "--dpop-bound-access-tokens",
      );
      assert.deepEqual(
        [created.tokenEndpointAuthMethod, JSON.parse(created.jwks).keys[0].kid, created.exchangeAudiences, created.allowImpersonation, created.dpopBoundAccessTokens],
        ["private_key_jwt", "k1", ["client-b", "https://api.example"], true, true],
      );
      assert.equal(created.clientSecretSealed, undefined);
      const turned = await json("app", "update", "--name", "jwt-app", "--token-endpoint-auth-method", "client_secret_jwt", "--no-allow-impersonation", "--no-dpop-bound-access-tokens");
      assert.deepEqual([turned.tokenEndpointAuthMethod, turned.allowImpersonation, turned.dpopBoundAccessTokens ?? false], ["client_secret_jwt", false, false]);
      assert.match(turned.clientSecret, /^[A-Za-z0-9_-]{22,}$/, "a kept secret for HS256, printed once");
      const shown = await admin("app", "show", "--name", "jwt-app");
      assert.ok(!shown.includes(turned.clientSecret) && !shown.includes("clientSecretSealed"), shown);
      await assert.rejects(admin("app", "update", "--name", "jwt-app", "--token-endpoint-auth-method", "none-such"), /tokenEndpointAuthMethod/);
      // Issue 45 §1: PAR required of this application, then not.
      assert.equal((await json("app", "update", "--name", "jwt-app", "--require-pushed-authorization-requests")).requirePushedAuthorizationRequests, true);
      assert.equal((await json("app", "update", "--name", "jwt-app", "--no-require-pushed-authorization-requests")).requirePushedAuthorizationRequests, false);
      await json("app", "delete", "--name", "jwt-app");
    });

    it("user create|list|show|update|delete", async () => {
      const created = await json("user", "create", "--name", "carol", "--password", "pw-carol-789", "--email", "carol@example.com");
      assert.equal(created.name, "carol");
      assert.equal(created.passwordHash, undefined);
      const shown = await admin("user", "show", "--name", "carol");
      assert.ok(!shown.includes("pw-carol-789") && !shown.includes("scrypt"), shown);
      assert.equal((await json("user", "update", "--name", "carol", "--display-name", "Carol C")).displayName, "Carol C");
      assert.equal((await json("user", "update", "--name", "carol", "--disabled", "--admin")).disabled, true);
      const reenabled = await json("user", "update", "--name", "carol", "--no-disabled");
      assert.deepEqual([reenabled.disabled, reenabled.isAdmin, reenabled.displayName], [false, true, "Carol C"]);
      await assert.rejects(admin("user", "update", "--name", "carol", "--admin", "--no-admin"), /contradict/);
      assert.deepEqual((await json("user", "list")).map((u: { name: string }) => u.name), ["carol"]);
      assert.deepEqual(await json("user", "delete", "--name", "carol"), { deleted: "carol" });
      await assert.rejects(admin("user", "show", "--name", "carol"), /no user named carol/);
      await assert.rejects(admin("user", "create", "--name", "dave", "--client-id", "x"), /clientId: is not a known field/);
    });

    it("provider create|list|show|update|delete: the secret is encrypted with IDENTITY_SECRET_KEY and never printed", async () => {
      const env = { IDENTITY_SECRET_KEY: "cli-test-key-0123456789abcdef-0123" };
      const provider = (...args: string[]) => runAdminCommand("provider", [...args, "--database", database], env);
      const secret = "upstream-secret-42";
      const created = JSON.parse(
        await provider(
          "create", "--name", "idp", "--type", "Custom", "--client-id", "ours", "--client-secret", secret,
          "--auth-url", "https://idp.example/auth", "--token-url", "https://idp.example/token",
          "--user-info-url", "https://idp.example/userinfo", "--favicon", "https://idp.example/favicon.ico", "--scope", "openid profile email",
        ),
      );
      assert.equal(created.userInfoUrl, "https://idp.example/userinfo");
      assert.equal(created.clientSecretEncrypted, true);
      assert.equal(created.trustEmail, false);
      assert.equal(created.clientSecret, undefined);

      const db = await openDb({ url: database });
      try {
        const stored = (await createStore(db).providers.findByName("idp"))!.clientSecret;
        assert.match(stored, /^aes256gcm:v1:/);
        assert.ok(!stored.includes(secret));
      } finally {
        await db.destroy();
      }

      const updated = JSON.parse(await provider("update", "--name", "idp", "--display-name", "The IdP", "--trust-email"));
      assert.deepEqual([updated.displayName, updated.trustEmail, updated.clientId], ["The IdP", true, "ours"]);
      assert.equal(JSON.parse(await provider("update", "--name", "idp", "--no-trust-email")).trustEmail, false);
      for (const output of [await provider("show", "--name", "idp"), await provider("list")]) assert.ok(!output.includes(secret), output);
      await assert.rejects(provider("update", "--name", "idp", "--token-url", "ftp://x"), /tokenUrl: must use http or https/);
      const options = JSON.parse(
        await provider(
          "update", "--name", "idp", "--user-mapping", '{"id":"id","username":"login","email":"emails.0.value"}',
          "--token-auth-method", "client_secret_post", "--pkce",
        ),
      );
      assert.deepEqual(
        [options.userMapping, options.tokenAuthMethod, options.pkce, options.allowInsecureUrls],
        [{ id: "id", username: "login", email: "emails.0.value" }, "client_secret_post", true, false],
      );
      assert.equal(JSON.parse(await provider("update", "--name", "idp", "--no-pkce")).pkce, false);
      assert.equal(JSON.parse(await provider("show", "--name", "idp")).sharedCallback, false);
      assert.equal(JSON.parse(await provider("update", "--name", "idp", "--shared-callback")).sharedCallback, true);
      assert.equal(JSON.parse(await provider("update", "--name", "idp", "--no-shared-callback")).sharedCallback, false);
      await assert.rejects(provider("update", "--name", "idp", "--user-mapping", "{not json"), /--user-mapping must be a JSON object/);
      await assert.rejects(provider("update", "--name", "idp", "--user-mapping", '{"uid":"x"}'), /uid: is not a known field/);
      await assert.rejects(provider("update", "--name", "idp", "--token-auth-method", "private_key_jwt"), /tokenAuthMethod: must be/);
      await assert.rejects(provider("update", "--name", "idp", "--token-url", "http://idp.example/token"), /tokenUrl: must use https/);
      // The secret is sent to the token URL: moving it, or allowing plain http, takes the secret again.
      await assert.rejects(provider("update", "--name", "idp", "--token-url", "http://idp.example/token", "--allow-insecure-urls"), /clientSecret: must be given again/);
      const insecure = JSON.parse(
        await provider("update", "--name", "idp", "--token-url", "http://idp.example/token", "--allow-insecure-urls", "--client-secret", secret),
      );
      assert.deepEqual([insecure.tokenUrl, insecure.allowInsecureUrls], ["http://idp.example/token", true]);
      await assert.rejects(provider("update", "--name", "idp", "--no-allow-insecure-urls"), /tokenUrl: must use https/);
      await assert.rejects(provider("create", "--name", "half", "--type", "Custom", "--client-id", "x"), /clientSecret: is required/);
      assert.deepEqual(JSON.parse(await provider("delete", "--name", "idp")), { deleted: "idp" });
      await assert.rejects(provider("show", "--name", "idp"), /no provider named idp/);
    });

    it("keys list|rotate, and export through the identity bin: PEM and a certificate of the same key", async () => {
      const [first] = await json("keys", "list");
      // The activation delay has its own test (keyRotation.spec.ts); here the new key signs at once.
      const rotated = await json("keys", "rotate", "--key-activation-delay-seconds", "0");
      assert.equal(rotated.privateJwk, undefined);
      const listed = await json("keys", "list");
      assert.deepEqual(listed.map((k: { kid: string; state: string }) => [k.kid, k.state]), [[rotated.kid, "signing"], [first.kid, "retiring"]]);

      const cli = runCli(["keys", "export", "--database", database], cleanEnv(), "bin/identity.js");
      assert.equal(await cli.exited, 0, cli.stderr());
      const output = cli.stdout();
      assert.ok(output.startsWith(`# kid ${rotated.kid}\n`));
      const publicKey = createPublicKey(output.match(/-----BEGIN PUBLIC KEY-----[^]*?-----END PUBLIC KEY-----/)![0]);
      const certificate = new X509Certificate(output.match(/-----BEGIN CERTIFICATE-----[^]*?-----END CERTIFICATE-----/)![0]);
      assert.ok(certificate.publicKey.equals(publicKey));
      assert.ok(certificate.checkIssued(certificate), "self-signed");
      assert.ok(certificate.verify(publicKey));
    });
  });

  describe("help, version and errors (issue 25 §4)", () => {
    const run = async (args: string[], env = cleanEnv()) => {
      const cli = runCli(args, env);
      return { code: await cli.exited, stdout: cli.stdout(), stderr: cli.stderr() };
    };

    it("answers --help and -h on every command and subcommand with its usage, exit 0", async () => {
      const overview = await run(["--help"]);
      assert.equal(overview.code, 0);
      assert.match(overview.stdout, /^usage: identity <command>/);
      assert.deepEqual(await run(["-h"]), overview);
      assert.deepEqual(await run(["help"]), overview);
      assert.equal((await run([])).code, 2, "no command at all is a usage error");
      // Every command the overview lists, and every verb of each admin command.
      const commands = [...overview.stdout.split("\n\n")[1]!.matchAll(/^ {2}([a-z]+)\b/gm)].map(([, command]) => command!);
      assert.ok(["serve", "app", "user", "provider", "keys", "help", "version"].every((c) => commands.includes(c)), commands.join(" "));
      for (const [i, command] of commands.entries()) {
        const help = await run([command, i % 2 ? "-h" : "--help"]);
        assert.equal(help.code, 0, `${command}: ${help.stderr}`);
        assert.match(help.stdout, /usage|identity serve \[options\]/, command);
        assert.equal(help.stderr, "");
      }
      for (const noun of ["app", "user", "provider", "keys"]) {
        const usage = (await run([noun, "--help"])).stdout;
        assert.match(usage, new RegExp(`^usage: identity ${noun} <command>`));
        assert.match(usage, /--database PATH\|URL/);
        const verbs = [...usage.split("\n\n")[1]!.matchAll(/^ {2}([a-z]+)/gm)].map(([, verb]) => verb!);
        assert.ok(verbs.length >= 3, usage);
        for (const [i, verb] of verbs.entries()) {
          // Nothing runs: no database is opened, even a bad one.
          const help = await run([noun, verb, i % 2 ? "-h" : "--help", "--database", "/dev/null/x.sqlite"]);
          assert.deepEqual(help, { code: 0, stdout: usage, stderr: "" }, `${noun} ${verb}`);
        }
        const bare = await run([noun]);
        assert.equal(bare.code, 2, `${noun} without a command`);
        assert.equal(bare.stderr, usage);
      }
      assert.match((await run(["serve", "--help"])).stdout, /\| `--issuer` \|/);
    });

    it("every admin flag is in the help of a command that reads it", async () => {
      const source = readFileSync("src/app/adminCommands.ts", "utf8");
      const block = source.slice(source.indexOf("const ADMIN_FLAGS"), source.indexOf("} as const;"));
      const flags = [...block.matchAll(/^ {2}"?([a-z-]+)"?: \{/gm)].map(([, flag]) => flag!).filter((flag) => flag !== "database");
      assert.ok(flags.length > 20, flags.join(" "));
      const helps = (await Promise.all(["app", "user", "provider", "keys"].map((noun) => run([noun, "--help"])))).map((r) => r.stdout).join("\n");
      for (const flag of flags) assert.ok(helps.includes(`--${flag}`), `--${flag} is in no command's help`);
    });

    it("prints the version of package.json with --version, -v and version", async () => {
      const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
      for (const args of [["--version"], ["-v"], ["version"]]) assert.deepEqual(await run(args), { code: 0, stdout: `${version}\n`, stderr: "" });
      const bin = runCli(["--version"], cleanEnv(), "bin/identity.js");
      assert.equal(await bin.exited, 0);
      assert.equal(bin.stdout(), `${version}\n`);
    });

    it("a database it cannot open is one line on stderr naming it and the reason, exit 1, for admin commands and serve", async () => {
      const notAFolder = join(dir, "a-file");
      writeFileSync(notAFolder, "");
      const notADatabase = join(dir, "not-a-database.sqlite");
      writeFileSync(notADatabase, "this is not SQLite\n".repeat(10));
      const cases: [string[], RegExp][] = [
        [["app", "list", "--database", join(notAFolder, "x.sqlite")], /^identity: cannot open the database .*a-file\/x\.sqlite: .*(EEXIST|ENOTDIR)/],
        [["user", "list", "--database", notADatabase], /^identity: cannot open the database .*not-a-database\.sqlite: SQLITE_NOTADB: file is not a database$/],
        // Port 1 on the loopback address: refused at once. The password never shows.
        [["keys", "list", "--database", "postgres://someone:hunter2-secret@127.0.0.1:1/identity"], /^identity: cannot open the database postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/identity: connect ECONNREFUSED 127\.0\.0\.1:1$/],
        [["serve", "--port", "0", "--database", "postgres://someone:hunter2-secret@127.0.0.1:1/identity"], /^identity: cannot open the database postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/identity: connect ECONNREFUSED/],
        [["serve", "--port", "0", "--database", notADatabase], /^identity: cannot open the database .*not-a-database\.sqlite: SQLITE_NOTADB/],
      ];
      for (const [args, line] of cases) {
        const { code, stdout, stderr } = await run(args);
        assert.equal(code, 1, args.join(" "));
        assert.equal(stderr.split("\n").length, 2, `one line: ${stderr}`);
        assert.match(stderr.trimEnd(), line);
        assert.doesNotMatch(stdout + stderr, /hunter2|\n\s+at /, "no password, no stack trace");
        assert.doesNotMatch(stdout, /listening/);
      }
    });

    it("migrate and backup name the database and the reason in one line too", async () => {
      const notADatabase = join(dir, "not-a-database-either.sqlite");
      writeFileSync(notADatabase, "this is not SQLite\n".repeat(10));
      const failures: [Promise<string>, RegExp][] = [
        [runMigrateCommand(["--status", "--database", "postgres://someone:hunter2-secret@127.0.0.1:1/identity"], {}), /^cannot read the database postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/identity: connect ECONNREFUSED 127\.0\.0\.1:1$/],
        [runMigrateCommand(["--database", notADatabase], {}), /^cannot migrate the database .*not-a-database-either\.sqlite: SQLITE_NOTADB: file is not a database$/],
        [runBackupCommand([join(dir, "copy.sqlite"), "--database", notADatabase], {}), /^cannot back up the database .*not-a-database-either\.sqlite: SQLITE_NOTADB/],
      ];
      for (const [failure, line] of failures) {
        await assert.rejects(failure, (err: Error) => {
          assert.match(err.message, line);
          assert.doesNotMatch(err.message, /\n|hunter2/);
          return true;
        });
      }
    });

    it("prints times as the admin RPCs answer them: the same names, in epoch seconds", async () => {
      const database = join(dir, "times.sqlite");
      const admin = async (noun: string, ...args: string[]) => JSON.parse(await runAdminCommand(noun, [...args, "--database", database], {}));
      const before = Math.floor(Date.now() / 1000);
      const app = await admin("app", "create", "--name", "timed", "--grant-type", "client_credentials");
      const user = await admin("user", "create", "--name", "timed-user");
      const [key] = await admin("keys", "list");
      const after = Math.ceil(Date.now() / 1000);
      for (const [what, record, fields] of [["app", app, ["createdTime", "updatedTime"]], ["user", user, ["createdTime", "updatedTime"]], ["key", key, ["createdTime", "activeFrom"]]] as const) {
        assert.equal(record.createdAt, undefined, `${what}: no createdAt in milliseconds`);
        for (const field of fields) {
          assert.ok(Number.isInteger(record[field]) && record[field] >= before - 1 && record[field] <= after, `${what}.${field}: ${record[field]}`);
        }
      }
      assert.equal(key.retiredTime, 0, "0 while published, as in the RPC");

      // The same database served: the RPCs answer the same numbers.
      const server = await startTestServer({ database });
      try {
        const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
        const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
        const listed = (await createClient(ApplicationAdminService, transport).listApplications({}, { headers })).applications.find((a) => a.name === "timed")!;
        assert.deepEqual([Number(listed.createdTime), Number(listed.updatedTime)], [app.createdTime, app.updatedTime]);
        const keys = (await createClient(KeyAdminService, transport).listKeys({}, { headers })).keys;
        const same = keys.find((k) => k.kid === key.kid)!;
        assert.deepEqual([Number(same.createdTime), Number(same.activeFrom), Number(same.retiredTime)], [key.createdTime, key.activeFrom, key.retiredTime]);
      } finally {
        await server.close();
      }
    });
  });
});
