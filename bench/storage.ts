import { httpAmount, httpLoad, measured } from "./load.js";
import { clientTokens, databaseFile, introspectionRequests, largestRssMB, seedStoredTokens, startOurs, tokenRequest, type OurServer } from "./ours.js";
import { failed, number, type Row } from "./report.js";
import { log, settings } from "./settings.js";

/**
 * Memory: our server's RSS once `settings.issued` tokens have been issued in
 * all (the rows before issued `issuedSoFar`); the rest are ES256, whose
 * cheaper signature makes the top-up faster than RS256.
 */
export async function memoryRow(server: OurServer, issuedSoFar: number): Promise<Row> {
  const topUp = Math.max(0, settings.issued - issuedSoFar);
  log(`issuing ${number(topUp)} more tokens for the memory row`);
  const issuance = topUp > 0 ? await httpAmount(server.url, [tokenRequest("ES256")], topUp) : undefined;
  const issued = issuedSoFar + (issuance?.ok ?? 0);
  const problem = issuance && failed(issuance);
  return { scenario: `RSS after ${number(issued)} issued tokens`, ours: largestRssMB(server), unit: "MB", referenceLabel: "limit", reference: 250, comparison: "atMost", target: 1, problem };
}

/** Introspection on a large token table against a small one: both servers up, their loads in turns. */
export async function largeStoreRow(dir: string): Promise<Row> {
  const servers: OurServer[] = [];
  try {
    for (const count of [settings.largeStore, settings.smallStore]) {
      log(`seeding ${number(count)} access-token rows`);
      await seedStoredTokens(databaseFile(dir, `stored-${count}`), count);
      servers.push(await startOurs(dir, `stored-${count}`));
    }
    const tokens = await Promise.all(servers.map((server) => clientTokens(server, settings.tokens)));
    const [large, small] = await measured(
      [`introspection with ${number(settings.largeStore)} stored`, `with ${number(settings.smallStore)} stored`],
      servers.map((server, i) => httpLoad(server.url, introspectionRequests(tokens[i]!))),
    );
    const scenario = `introspection with ${number(settings.largeStore)} stored tokens`;
    return { scenario, ours: large!.rps, unit: "req/s", referenceLabel: `with ${number(settings.smallStore)} stored`, reference: small!.rps, comparison: "atLeast", target: 0.9, problem: failed(large!, small!) };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}
