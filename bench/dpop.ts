import { createHash, generateKeyPairSync, randomUUID, sign, type KeyObject } from "node:crypto";
import autocannon from "autocannon";
import { CONNECTIONS, FORM, httpLoad, measured, type LoadResult, type TurnLoad } from "./load.js";
import { BENCH_USER, clientAuth, TOKEN_PATH, USERINFO_PATH, userinfoRequests, userTokens, type OurServer } from "./ours.js";
import { failed, type Row } from "./report.js";
import { settings } from "./settings.js";

/** A client's DPoP key (ES256), signing proofs synchronously, as a load generator's request hook must. */
class ProofSigner {
  private readonly privateKey: KeyObject;
  private readonly header: string;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.privateKey = privateKey;
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

/**
 * The DPoP row (issue 45): userinfo with a DPoP-bound token against the same
 * with a Bearer token, in turns. A proof costs one signature check and one
 * jti insert: the target is half the Bearer rate.
 */
export async function dpopRow(ours: OurServer): Promise<Row> {
  const signer = new ProofSigner();
  const [bound, bearer] = await Promise.all([boundUserTokens(ours, signer, settings.userTokens), userTokens(ours, settings.userTokens)]);
  const [dpop, plain] = await measured(
    ["userinfo, DPoP-bound token", "userinfo, Bearer token"],
    [dpopUserinfoLoad(ours, signer, bound), httpLoad(ours.url, userinfoRequests(bearer))],
  );
  return {
    scenario: "userinfo with a DPoP-bound token (a fresh proof each request)",
    ours: dpop!.rps,
    unit: "req/s",
    referenceLabel: "the same with a Bearer token",
    reference: plain!.rps,
    comparison: "atLeast",
    target: 0.5,
    problem: failed(dpop!, plain!),
  };
}
