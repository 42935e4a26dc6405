import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { decodeJwt } from "jose";
import { SERVE_OPTIONS } from "../../src/app/config.js";
import { listeningUrl } from "../../src/app/server.js";
import { cleanEnv, ensureBuilt, runCli } from "../support/cli.js";

const README = readFileSync("README.md", "utf8");
const PACKAGE = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string>; bin: Record<string, string> };
const defaultOf = (key: string) => SERVE_OPTIONS.find((o) => o.key === key)!.default;

/** The README's "Run it" section: its shell block and the prose after it. */
function runIt(): { commands: string; prose: string } {
  const section = /^## Run it\n([\s\S]*?)^## /m.exec(README)?.[1];
  assert.ok(section, "README.md has a ## Run it section");
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(block, "the Run it section has a sh block");
  return { commands: block[1]!.trim(), prose: section.slice(block.index + block[0].length) };
}

/**
 * Issue 25 §4: the README's quick start, done as it says. `npm start` is run
 * the way package.json defines it (its prestart build is ensureBuilt here),
 * on a temporary database and --port 0 (the option the README gives); the
 * printed curl command is run as printed, by a shell and the real curl.
 */
describe("the README's quick start", function () {
  this.timeout(120_000); // covers a rebuild of dist/ when the sources are newer

  before(() => ensureBuilt());

  it("says what npm start runs: the built server's serve, built first, on the defaults it names", () => {
    const { commands, prose } = runIt();
    assert.equal(commands, "npm ci && npm start");
    assert.equal(PACKAGE.scripts.start, "node dist/src/main.js serve");
    assert.match(PACKAGE.scripts.prestart ?? "", /npm run build/, "This builds the service");
    assert.match(PACKAGE.scripts.prepare ?? "", /npm run build/, "npm ci builds, so npx identity works after it");
    assert.ok(existsSync(PACKAGE.bin.identity!), "npx identity runs the bin");
    assert.ok(prose.includes(`(\`${defaultOf("database")}\`)`), "the default database file");
    const printed = /`(listening on (http:\/\/\S+))`/.exec(prose);
    assert.ok(printed, "the README quotes the listening line");
    assert.equal(printed[2], listeningUrl(defaultOf("host"), Number(defaultOf("port"))), "the README's URL is the default one");
    assert.match(prose, /npm start -- --port 0/);
  });

  it("first start: prints the listening URL and a curl command that, run as printed, gets a token; discovery names that URL; a later start prints nothing secret", async () => {
    const [node, script, ...args] = PACKAGE.scripts.start!.split(" ");
    assert.equal(node, "node");
    const database = join(mkdtempSync(join(tmpdir(), "identity-quickstart-")), "identity.sqlite");
    const start = () => runCli([...args, "--port", "0", "--database", database], cleanEnv(), script);

    const first = start();
    try {
      // The line the README quotes, on whatever port 0 picked.
      const url = (await first.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
      const [curlLine] = await first.waitFor(/^\s*curl .*$/m);
      assert.match(first.stdout(), /These secrets are shown only once/);

      const { stdout } = await promisify(execFile)("sh", ["-c", curlLine.trim()], { encoding: "utf8" });
      const body = JSON.parse(stdout) as Record<string, unknown>;
      assert.equal(body.token_type, "Bearer", stdout);
      assert.equal(typeof body.access_token, "string");
      assert.ok(body.id_token, "the curl asks for openid");

      // Discovery through the printed URL names it, and so does every token.
      const discovery = (await (await fetch(`${url}/.well-known/openid-configuration`)).json()) as Record<string, string>;
      assert.equal(discovery.issuer, url);
      assert.equal(discovery.token_endpoint, `${url}/api/login/oauth/access_token`);
      assert.equal(discovery.authorization_endpoint, `${url}/login/oauth/authorize`);
      assert.equal(decodeJwt(body.access_token as string).iss, url);
    } finally {
      first.child.kill("SIGTERM");
    }
    assert.equal(await first.exited, 0, "SIGTERM stops it cleanly");

    const later = start();
    await later.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/);
    later.child.kill("SIGTERM");
    assert.equal(await later.exited, 0);
    assert.doesNotMatch(later.stdout(), /client_secret|password|curl/);
  });
});
