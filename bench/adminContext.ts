import { httpLoad, inTurns, rateText } from "./load.js";
import { clientTokens, introspectionRequests, startOurs, type OurServer } from "./ours.js";
import { log, settings } from "./settings.js";

const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef0123";
const PAIRS = 3;

/**
 * --admin-context (issue 42 §6): shared/audit.ts carries an admin call's
 * caller in an AsyncLocalStorage, whose first `run` may slow every promise
 * after it on Node 20. REST introspection, in turns, on a server that has
 * served one admin call against one that never has: fresh pairs, the
 * admin call made on the first server of one pair and the second of the next.
 */
export async function measureAdminContext(dir: string): Promise<void> {
  const ratios: number[] = [];
  for (let pair = 1; pair <= PAIRS; pair++) {
    const servers: OurServer[] = [];
    try {
      for (const side of ["a", "b"]) servers.push(await startOurs(dir, `admin-context-${pair}-${side}`, 1, { IDENTITY_ADMIN_TOKEN: ADMIN_TOKEN }));
      const admin = pair % 2 === 1 ? 0 : 1;
      await adminCall(servers[admin]!);
      const tokens = await Promise.all(servers.map((server) => clientTokens(server, settings.tokens)));
      log(`pair ${pair}: REST introspection, server ${admin === 0 ? "a" : "b"} after an admin call, in ${settings.turns} turns`);
      const results = await inTurns(servers.map((server, i) => httpLoad(server.url, introspectionRequests(tokens[i]!))));
      const [after, never] = [results[admin]!, results[1 - admin]!];
      ratios.push(after.rps / never.rps);
      log(`  after an admin call: ${rateText(after)}; never one: ${rateText(never)}; after/never ${ratios.at(-1)!.toFixed(2)}x`);
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
    }
  }
  log(`after/never, per pair: ${ratios.map((r) => r.toFixed(2)).join(", ")}`);
}

async function adminCall(server: OurServer): Promise<void> {
  const answer = await fetch(`${server.url}/identity.v1.ApplicationAdminService/ListApplications`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
    body: "{}",
  });
  if (answer.status !== 200) throw new Error(`the admin call answered ${answer.status}`);
}
