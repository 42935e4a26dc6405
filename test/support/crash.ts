import { join } from "node:path";
import knex from "knex";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, signIn, type CookieJar } from "./browserless.js";
import { cleanEnv, runCli, type CliProcess } from "./cli.js";
import { basicAuth, postForm, TEST_APP, TEST_USER, writeConfigFile } from "./server.js";

const LISTENING = /listening on (http:\/\/\S+) /;
/** The test application with refresh tokens on, so refresh rotation is part of the load. */
const APP = { ...TEST_APP, refreshExpireInHours: 1 };

/** What one round saw, and what it found wrong (empty when the promises held). */
export interface CrashRoundReport {
  killedAfterMs: number;
  issuedAccessTokens: number;
  usedRefreshTokens: number;
  redeemedCodes: number;
  inFlightAtKill: number;
  violations: string[];
  integrity: string;
}

/** The service as a child process on a SQLite file; SIGKILL is the crash. */
async function startProcess(database: string, configFile: string): Promise<{ cli: CliProcess; url: string }> {
  const cli = runCli(["serve", "--port", "0", "--database", database, "--config", configFile, "--cleanup-interval-seconds", "0"], cleanEnv());
  const [, url] = await cli.waitFor(LISTENING);
  return { cli, url: url! };
}

/**
 * Everything the load learned from answers it got: an answer is a promise
 * the service must keep across the crash. Requests still in flight at the
 * kill promised nothing, so they are tracked apart.
 */
class Ledger {
  /** Access tokens from a 200: each must still introspect active after the restart. */
  readonly accessTokens: string[] = [];
  /** Refresh tokens from a 200 that nobody tried to use: each must work exactly once after the restart. */
  readonly freshRefreshTokens = new Set<string>();
  /** Refresh tokens whose use got a 200: each must be refused after the restart. */
  readonly usedRefreshTokens: string[] = [];
  /** Codes whose redemption got a 200: each must be refused after the restart. */
  readonly redeemedCodes: string[] = [];
  /** Refresh tokens and codes sent, with no answer yet: at most one more use of each may succeed. */
  readonly inFlightRefreshTokens = new Set<string>();
  readonly inFlightCodes = new Set<string>();
}

const tokenEndpoint = (url: string) => `${url}/api/login/oauth/access_token`;
const basic = { authorization: basicAuth(APP.clientId, APP.clientSecret) };

async function passwordGrant(url: string) {
  return postForm(tokenEndpoint(url), { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" }, basic);
}
const refresh = (url: string, token: string) => postForm(tokenEndpoint(url), { grant_type: "refresh_token", refresh_token: token }, basic);
const redeem = (url: string, code: string) =>
  postForm(tokenEndpoint(url), { grant_type: "authorization_code", code, redirect_uri: APP.redirectUris[0]! }, basic);

/** Issue, rotate and redeem until `stopped()`; every answer goes into the ledger. */
async function load(url: string, ledger: Ledger, stopped: () => boolean, jar: CookieJar): Promise<void> {
  const record = (body: { access_token?: string; refresh_token?: string }) => {
    if (body.access_token) ledger.accessTokens.push(body.access_token);
    if (body.refresh_token) ledger.freshRefreshTokens.add(body.refresh_token);
  };
  const issue = async () => {
    while (!stopped()) {
      const res = await passwordGrant(url);
      if (res.status === 200) record(res.body);
    }
  };
  const rotate = async () => {
    while (!stopped()) {
      const token = ledger.freshRefreshTokens.values().next().value;
      if (token === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      ledger.freshRefreshTokens.delete(token);
      ledger.inFlightRefreshTokens.add(token);
      const res = await refresh(url, token);
      ledger.inFlightRefreshTokens.delete(token);
      if (res.status !== 200) throw new Error(`refresh refused before the crash: ${JSON.stringify(res.body)}`);
      ledger.usedRefreshTokens.push(token);
      record(res.body);
    }
  };
  const codes = async () => {
    while (!stopped()) {
      // The session skips the form: a code per request, without a password to check.
      const res = await browse(authorizeUrl(url), jar);
      const code = new URL(res.headers.get("location") ?? "http://x/").searchParams.get("code");
      if (!code) continue;
      ledger.inFlightCodes.add(code);
      const redeemed = await redeem(url, code);
      ledger.inFlightCodes.delete(code);
      if (redeemed.status !== 200) throw new Error(`redemption refused before the crash: ${JSON.stringify(redeemed.body)}`);
      ledger.redeemedCodes.push(code);
      record(redeemed.body);
    }
  };
  // Once the process is killed every request fails: that is the end of the load, not an error.
  const untilKilled = (work: () => Promise<void>) => work().catch((err) => (stopped() ? undefined : Promise.reject(err)));
  await Promise.all([untilKilled(issue), untilKilled(issue), untilKilled(rotate), untilKilled(rotate), untilKilled(codes)]);
}

/**
 * One round: run the service on a SQLite file under issuance load, SIGKILL
 * it `killAfterMs` into the load, restart it on the same file and check that every
 * answer given before the kill still holds: issued tokens are active, used
 * refresh tokens and codes cannot be used again, unused refresh tokens work
 * exactly once; then the file passes `PRAGMA integrity_check`.
 */
export async function crashRound(dir: string, round: number, killAfterMs: number): Promise<CrashRoundReport> {
  const database = join(dir, `crash-${round}.sqlite`);
  const configFile = writeConfigFile({ applications: [APP], users: [TEST_USER] });
  const ledger = new Ledger();
  const violations: string[] = [];

  const first = await startProcess(database, configFile);
  const { jar } = await signIn({ url: first.url } as RunningServer);
  let killed = false;
  const loading = load(first.url, ledger, () => killed, jar);
  // The kill comes `killAfterMs` after the load has made promises of every kind, so there is something to check.
  const warm = () => ledger.accessTokens.length > 0 && ledger.usedRefreshTokens.length > 0 && ledger.redeemedCodes.length > 0;
  for (let waited = 0; !warm(); waited += 10) {
    if (waited > 30_000) throw new Error("the load made no promises within 30 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await new Promise((resolve) => setTimeout(resolve, killAfterMs));
  killed = true;
  first.cli.child.kill("SIGKILL");
  await first.cli.exited;
  await loading;
  const inFlightAtKill = ledger.inFlightRefreshTokens.size + ledger.inFlightCodes.size;

  const second = await startProcess(database, configFile);
  try {
    const url = second.url;
    // First what must still be there, before any reuse below revokes families.
    for (const token of ledger.accessTokens) {
      const res = await postForm(`${url}/api/login/oauth/introspect`, { token }, basic);
      if (res.body?.active !== true) violations.push(`an access token issued with a 200 is not active after the restart: ${JSON.stringify(res.body)}`);
    }
    for (const token of ledger.freshRefreshTokens) {
      const uses = [(await refresh(url, token)).status, (await refresh(url, token)).status];
      if (uses[0] !== 200 || uses[1] !== 400) violations.push(`an unused refresh token did not work exactly once after the restart: ${uses}`);
    }
    for (const [secret, use] of [
      ...[...ledger.inFlightRefreshTokens].map((t) => [t, () => refresh(url, t)] as const),
      ...[...ledger.inFlightCodes].map((c) => [c, () => redeem(url, c)] as const),
    ]) {
      // Its use may or may not have committed before the kill: either way, at most one use may work.
      const statuses = [(await use()).status, (await use()).status];
      if (statuses.filter((s) => s === 200).length > 1) violations.push(`a secret in flight at the kill was used twice after the restart (${secret.slice(0, 8)}…)`);
    }
    for (const token of ledger.usedRefreshTokens) {
      const res = await refresh(url, token);
      if (res.status !== 400 || res.body?.error !== "invalid_grant") violations.push(`a refresh token used before the crash worked again: ${res.status}`);
    }
    for (const code of ledger.redeemedCodes) {
      const res = await redeem(url, code);
      if (res.status !== 400 || res.body?.error !== "invalid_grant") violations.push(`a code redeemed before the crash was redeemed again: ${res.status}`);
    }
  } finally {
    second.cli.child.kill("SIGKILL");
    await second.cli.exited;
  }

  const db = knex({ client: "sqlite3", connection: { filename: database }, useNullAsDefault: true });
  let integrity: string;
  try {
    const rows = (await db.raw("PRAGMA integrity_check")) as Array<{ integrity_check: string }>;
    integrity = rows.map((r) => r.integrity_check).join("; ");
  } finally {
    await db.destroy();
  }
  if (integrity !== "ok") violations.push(`PRAGMA integrity_check: ${integrity}`);

  return {
    killedAfterMs: killAfterMs,
    issuedAccessTokens: ledger.accessTokens.length,
    usedRefreshTokens: ledger.usedRefreshTokens.length,
    redeemedCodes: ledger.redeemedCodes.length,
    inFlightAtKill,
    violations,
    integrity,
  };
}
