import { createHash, generateKeyPairSync, randomUUID, sign, verify, type KeyObject } from "node:crypto";
import autocannon from "autocannon";
import { CONNECTIONS, FORM, httpLoad, measured, type LoadResult, type TurnLoad } from "./load.js";
import { BENCH_USER, clientAuth, TOKEN_PATH, USERINFO_PATH, userinfoRequests, userTokens, type OurServer } from "./ours.js";
import { cpuMs } from "./processes.js";
import { failed, number, type Row } from "./report.js";
import { settings } from "./settings.js";

/** A client's DPoP key (ES256), signing proofs synchronously, as a load generator's request hook must. */
class ProofSigner {
  private readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  private readonly header: string;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.privateKey = privateKey;
    this.publicKey = publicKey;
    const { kty, crv, x, y } = publicKey.export({ format: "jwk" });
    this.header = Buffer.from(JSON.stringify({ typ: "dpop+jwt", alg: "ES256", jwk: { kty, crv, x, y } })).toString("base64url");
  }

  /** A fresh proof (RFC 9449 §4.2) for `htm` `htu`, with `ath` when it goes with an access token. */
  proof(htm: string, htu: string, accessToken?: string): string {
    const ath = accessToken && createHash("sha256").update(accessToken).digest("base64url");
    const payload = { jti: randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000), ...(ath ? { ath } : {}) };
    const input = `${this.header}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
    return `${input}.${sign("sha256", Buffer.from(input), { key: this.privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
  }
}

/** `count` DPoP-bound access tokens of the bench user, each bound to `signer`'s key. */
async function boundUserTokens(server: OurServer, signer: ProofSigner, count: number): Promise<string[]> {
  const body = new URLSearchParams({ grant_type: "password", username: BENCH_USER.name, password: BENCH_USER.password, scope: "openid profile email phone" });
  return Promise.all(
    Array.from({ length: count }, async () => {
      const dpop = signer.proof("POST", server.url + TOKEN_PATH);
      const response = await fetch(server.url + TOKEN_PATH, { method: "POST", headers: { "content-type": FORM, ...clientAuth(), dpop }, body });
      const json = (await response.json()) as { access_token?: string; token_type?: string };
      if (json.token_type !== "DPoP") throw new Error(`no DPoP-bound token: ${response.status} ${JSON.stringify(json)}`);
      return json.access_token!;
    }),
  );
}

/**
 * userinfo with DPoP-bound tokens: every request a fresh proof. Proofs are
 * signed before each run, off the measured time, as many as the last run
 * used and half again (the generator shares the cores with the server); a
 * request past the pool signs its own.
 */
function dpopUserinfoLoad(server: OurServer, signer: ProofSigner, tokens: string[]): TurnLoad {
  const htu = server.url + USERINFO_PATH;
  let poolSize = 20_000;
  return async (seconds, warmupSeconds) => {
    let next = 0;
    const pairs = Array.from({ length: poolSize }, (_, i) => {
      const token = tokens[i % tokens.length]!;
      return { token, proof: signer.proof("GET", htu, token) };
    });
    const fresh = () => {
      const pair = pairs[next++] ?? { token: tokens[0]!, proof: signer.proof("GET", htu, tokens[0]) };
      return { authorization: `DPoP ${pair.token}`, dpop: pair.proof };
    };
    const requests = [{ method: "GET" as const, path: USERINFO_PATH, setupRequest: (req: Record<string, unknown>) => ({ ...req, headers: fresh() }) }];
    const run = (duration: number) => autocannon({ url: server.url, connections: CONNECTIONS, pipelining: 1, duration, requests });
    const warmup = warmupSeconds > 0 ? (await run(warmupSeconds))["2xx"] : 0;
    const result = await run(seconds);
    poolSize = Math.max(poolSize, Math.ceil(next * 1.5));
    const summary: LoadResult = {
      rps: result["2xx"] / result.duration,
      p99Ms: result.latency.p99,
      ok: result["2xx"],
      okWithWarmup: result["2xx"] + warmup,
      failures: result.non2xx + result.errors + result.timeouts,
    };
    return summary;
  };
}

/** A load that also counts the server's CPU time and answers over every turn. */
function withServerCpu(load: TurnLoad, pid: number): { load: TurnLoad; msPerRequest: () => number } {
  let ms = 0;
  let answered = 0;
  return {
    load: async (seconds, warmupSeconds) => {
      const before = cpuMs(pid);
      const result = await load(seconds, warmupSeconds);
      ms += cpuMs(pid) - before;
      answered += result.okWithWarmup;
      return result;
    },
    msPerRequest: () => ms / Math.max(answered, 1),
  };
}

/** The CPU time of one ES256 proof verification by node:crypto, as oauth/dpopKeys.ts does it, in ms. */
function verificationMs(signer: ProofSigner, htu: string): number {
  const proofs = Array.from({ length: 2000 }, () => signer.proof("GET", htu, "token").split("."));
  const started = process.cpuUsage();
  for (const [header, payload, signature] of proofs) {
    verify("sha256", Buffer.from(`${header}.${payload}`), { key: signer.publicKey, dsaEncoding: "ieee-p1363" }, Buffer.from(signature!, "base64url"));
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000 / proofs.length;
}

/**
 * The DPoP row (issue 45): userinfo with a DPoP-bound token against the same
 * with a Bearer token, in turns. A proof costs one signature check and one
 * jti insert: the target is half the Bearer rate. Its figure says what
 * bounds it: the server's CPU per request for each, and one verification's.
 */
export async function dpopRow(ours: OurServer): Promise<{ row: Row; figures: string[] }> {
  const signer = new ProofSigner();
  const [bound, bearer] = await Promise.all([boundUserTokens(ours, signer, settings.userTokens), userTokens(ours, settings.userTokens)]);
  const pid = ours.pids[0]!;
  const dpopLoad = withServerCpu(dpopUserinfoLoad(ours, signer, bound), pid);
  const bearerLoad = withServerCpu(httpLoad(ours.url, userinfoRequests(bearer)), pid);
  const [dpop, plain] = await measured(["userinfo, DPoP-bound token", "userinfo, Bearer token"], [dpopLoad.load, bearerLoad.load]);
  const [dpopMs, bearerMs, verifyMs] = [dpopLoad.msPerRequest(), bearerLoad.msPerRequest(), verificationMs(signer, ours.url + USERINFO_PATH)];
  const ms = (value: number) => `${number(value, 3)} ms`;
  const figure =
    `DPoP row, server CPU per answered request: DPoP-bound ${ms(dpopMs)}, Bearer ${ms(bearerMs)}; ` +
    `one ES256 proof verification (node:crypto, in the bench process) ${ms(verifyMs)}, ` +
    `so even with the rest of a proof free the server would reach ${number(bearerMs / (bearerMs + verifyMs), 2)}x`;
  const row: Row = {
    scenario: "userinfo with a DPoP-bound token (a fresh proof each request)",
    ours: dpop!.rps,
    unit: "req/s",
    referenceLabel: "the same with a Bearer token",
    reference: plain!.rps,
    comparison: "atLeast",
    target: 0.5,
    problem: failed(dpop!, plain!),
  };
  return { row, figures: [figure] };
}
