import { readFileSync } from "node:fs";
import { join } from "node:path";
import { httpLoad, inTurns, rateText, type TurnLoad } from "./load.js";
import { clientTokens, introspectionRequests, startOurs, tokenRequest, userinfoRequests, userTokens, type OurServer } from "./ours.js";
import { privateKeyJwtRequest } from "./delegation.js";
import { log, settings } from "./settings.js";
import { grpcLoad, grpcNotOk } from "./verification.js";

/**
 * --fast-paths: what each fast path gains on the rows it serves. Our server
 * with every fast path, with each of the gRPC door, group commit, audit
 * staging and jti batches off, and with all off (IDENTITY_PLAIN_PATHS), each row's loads in turns; each ratio is the
 * variant before over the one after. REST never meets the gRPC door: on its
 * rows, all plain is the row reader off.
 */
export async function measureFastPaths(dir: string): Promise<void> {
  const variants = new Map<string, { server: OurServer; tokens: string[]; users: string[] }>();
  try {
    const switches = { fast: "0", "no grpc-unary": "grpc-unary", "no group-commit": "group-commit", "no audit-staging": "audit-staging", "no jti-batch": "jti-batch", "all plain": "1" };
    for (const [name, plain] of Object.entries(switches)) {
      const server = await startOurs(dir, plain, 1, { IDENTITY_PLAIN_PATHS: plain });
      variants.set(name, { server, tokens: await clientTokens(server, settings.tokens), users: await userTokens(server, settings.userTokens) });
      log(`${name}: ${/IDENTITY_PLAIN_PATHS=.*/.exec(readFileSync(join(dir, `${plain}.log`), "utf8"))?.[0]}`);
    }
    const rows: [string, string[], (v: { server: OurServer; tokens: string[]; users: string[] }) => TurnLoad][] = [
      ["gRPC introspection (h2load)", ["fast", "no grpc-unary", "all plain"], (v) => grpcLoad(v.server.url, v.tokens[0]!, dir)],
      ["REST introspection", ["fast", "all plain"], (v) => httpLoad(v.server.url, introspectionRequests(v.tokens))],
      ["userinfo", ["fast", "all plain"], (v) => httpLoad(v.server.url, userinfoRequests(v.users))],
      // Opaque tokens are the ones whose rows are written; each response is a token_issued audit event too.
      ["client_credentials, opaque: group commit", ["fast", "no group-commit"], (v) => httpLoad(v.server.url, [tokenRequest("opaque")])],
      ["client_credentials, opaque: audit staging", ["fast", "no audit-staging"], (v) => httpLoad(v.server.url, [tokenRequest("opaque")])],
      // Every request a fresh client assertion, whose jti is recorded once.
      ["client_credentials, private_key_jwt: jti batches", ["fast", "no jti-batch"], (v) => httpLoad(v.server.url, [privateKeyJwtRequest(v.server.url)])],
    ];
    for (const [row, names, loadOf] of rows) {
      log(`${row}: ${names.join(", ")}, in ${settings.turns} turns`);
      const servers = names.map((name) => variants.get(name)!.server);
      const notOkBefore = await Promise.all(servers.map((server) => grpcNotOk(server.url)));
      const results = await inTurns(names.map((name) => loadOf(variants.get(name)!)));
      for (const [i, name] of names.entries()) {
        const r = { ...results[i]!, failures: results[i]!.failures + (await grpcNotOk(servers[i]!.url)) - notOkBefore[i]! };
        log(`  ${name}: ${rateText(r)}${i > 0 ? `; ${names[i - 1]} is ${(results[i - 1]!.rps / r.rps).toFixed(2)}x this` : ""}`);
      }
    }
  } finally {
    await Promise.all([...variants.values()].map((v) => v.server.stop()));
  }
}
