import assert from "node:assert/strict";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { RunningServer } from "../../src/app/server.js";
import { backupSqlite } from "../../src/store/backup.js";
import { runIdentity } from "../support/cliSource.js";
import { isActive } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

// Both servers announce the issuer a restored deployment keeps.
const ISSUER = "http://identity.test";
const WORKERS = 4;
// Tokens issued before the backup starts: enough to span many WAL commits.
const ISSUED_BEFORE_BACKUP = 150;

interface Issued {
  token: string;
  /** When the token request was sent and when its answer arrived (performance.now()). */
  sentAt: number;
  receivedAt: number;
}

/** One token request: client_credentials, or every fourth time the password grant. */
async function issue(server: RunningServer, n: number): Promise<Issued> {
  const sentAt = performance.now();
  const params: Record<string, string> =
    n % 4 === 3 ? { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password } : { grant_type: "client_credentials" };
  const res = await postForm(`${server.url}/api/login/oauth/access_token`, params, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
  assert.equal(res.status, 200, res.text);
  return { token: res.body.access_token, sentAt, receivedAt: performance.now() };
}

/** Whether every token introspects as `active` (or every one as not) on `server`, 8 at a time. */
async function activity(server: RunningServer, tokens: Issued[]): Promise<boolean[]> {
  const results: boolean[] = [];
  for (let i = 0; i < tokens.length; i += 8) {
    results.push(...(await Promise.all(tokens.slice(i, i + 8).map((t) => isActive(server, t.token)))));
  }
  return results;
}

describe("identity backup", function () {
  this.timeout(120_000);
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "identity-backup-"));
  });

  /**
   * Issue tokens from WORKERS loops on a server on a SQLite file, run
   * `backup(live, copy)` once ISSUED_BEFORE_BACKUP have been answered, keep
   * issuing past its end, then start a second server on the copy: every token
   * answered before the backup began is active there, none asked for after
   * it ended is, and the original still knows them all.
   */
  async function backupUnderLoad(name: string, backup: (live: string, copy: string) => Promise<void>, options: { issuesDuring: boolean }): Promise<void> {
    const live = join(dir, `${name}-live.sqlite`);
    const copy = join(dir, `${name}-copy.sqlite`);
    const original = await startTestServer({ database: live, overrides: { issuer: ISSUER } });
    const issued: Issued[] = [];
    let stop = false;
    let n = 0;
    const workers = Array.from({ length: WORKERS }, async () => {
      while (!stop) issued.push(await issue(original, n++));
    });
    let restored: RunningServer | undefined;
    try {
      while (issued.length < ISSUED_BEFORE_BACKUP) await new Promise((resolve) => setTimeout(resolve, 5));
      const before = issued.slice();
      const backupStarted = performance.now();
      await backup(live, copy);
      const backupEnded = performance.now();
      // Let the load run on past the copy, then stop it.
      const countAtEnd = issued.length;
      while (issued.length < countAtEnd + 20) await new Promise((resolve) => setTimeout(resolve, 5));
      stop = true;
      await Promise.all(workers);

      if (options.issuesDuring) {
        assert.ok(issued.some((t) => t.sentAt > backupStarted && t.receivedAt < backupEnded), "the server went on issuing tokens while the backup ran");
      }
      assert.equal(statSync(copy).mode & 0o777, 0o600, "the copy holds private keys: owner only");

      restored = await startTestServer({ database: copy, overrides: { issuer: ISSUER } });
      const activeOnCopy = await activity(restored, before);
      const missing = before.filter((_, i) => !activeOnCopy[i]);
      assert.equal(missing.length, 0, `${missing.length} of ${before.length} tokens issued before the backup are not active on the copy`);

      // The copy is a snapshot: what was asked for after it ended is not in it.
      const after = issued.filter((t) => t.sentAt > backupEnded);
      assert.ok(after.length > 0);
      assert.deepEqual(new Set(await activity(restored, after)), new Set([false]));
      // ... and the original still knows every token.
      assert.deepEqual(new Set(await activity(original, issued)), new Set([true]));
    } finally {
      stop = true;
      await Promise.allSettled(workers);
      await restored?.close();
      await original.close();
    }
  }

  it("backupSqlite (what the command runs) copies the file under issuance load: every token answered before it began is active on a server started on the copy", async () => {
    // In process, so that "before" ends right where the copy starts: the
    // last tokens are still in the WAL, not yet checkpointed into the file.
    await backupUnderLoad("direct", async (live, copy) => {
      await backupSqlite(live, copy);
    }, { issuesDuring: false }); // a copy of a small file may take less than one token request
  });

  it("`identity backup FILE` does the same from another process while the server runs", async () => {
    await backupUnderLoad("cli", async (live, copy) => {
      const result = await runIdentity(["backup", copy, "--database", live]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /backed up .* to .*cli-copy\.sqlite \(\d+ bytes\)/);
    }, { issuesDuring: true });
  });

  it("refuses to overwrite an existing file", async () => {
    const live = join(dir, "refuse.sqlite");
    const server = await startTestServer({ database: live });
    await server.close();
    const existing = join(dir, "existing.sqlite");
    writeFileSync(existing, "keep me");
    const result = await runIdentity(["backup", existing, "--database", live]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /already exists: refusing to overwrite it/);
    assert.equal(statSync(existing).size, "keep me".length);
  });

  it("refuses PostgreSQL and points to pg_dump in docs/operations.md", async () => {
    const result = await runIdentity(["backup", join(dir, "pg.sqlite")], { DATABASE_URL: "postgres://identity@127.0.0.1:1/identity" });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /pg_dump \(docs\/operations\.md, Backups\)/);
  });
});
