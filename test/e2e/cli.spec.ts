import assert from "node:assert/strict";
import { createPublicKey, X509Certificate } from "node:crypto";
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import { openDb } from "../../src/store/db.js";
import { createStore } from "../../src/store/index.js";
import { cleanEnv, ensureBuilt, runCli } from "../support/cli.js";
import { startTestServer, TEST_APP, writeConfigFile } from "../support/server.js";

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

    before(() => (database = join(dir, "admin.sqlite")));

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
      await assert.rejects(provider("update", "--name", "idp", "--user-mapping", "{not json"), /--user-mapping must be a JSON object/);
      await assert.rejects(provider("update", "--name", "idp", "--user-mapping", '{"uid":"x"}'), /uid: is not a known field/);
      await assert.rejects(provider("update", "--name", "idp", "--token-auth-method", "private_key_jwt"), /tokenAuthMethod: must be/);
      await assert.rejects(provider("update", "--name", "idp", "--token-url", "http://idp.example/token"), /tokenUrl: must use https/);
      const insecure = JSON.parse(await provider("update", "--name", "idp", "--token-url", "http://idp.example/token", "--allow-insecure-urls"));
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
});
