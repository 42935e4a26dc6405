import { httpLoad, measured } from "./load.js";
import { clientTokens, introspectionRequests, startOurs, tokenRequest } from "./ours.js";
import { failed, type Row } from "./report.js";
import { settings, workers } from "./settings.js";

/**
 * `serve --workers N` against one process, both up at once on SQLite files
 * of their own, their loads in turns: introspection and RS256
 * client_credentials. The ratio is the scaling; it has no target, since on
 * this machine the load generator needs a core too.
 */
export async function workersRows(dir: string): Promise<Row[]> {
  const servers = [await startOurs(dir, "workers-1"), await startOurs(dir, `workers-${workers}`, workers)];
  try {
    const tokens = await Promise.all(servers.map((server) => clientTokens(server, settings.tokens)));
    const label = [`--workers 1`, `--workers ${workers}`];
    const [intro1, introN] = await measured(label.map((l) => `introspection, ${l}`), servers.map((server, i) => httpLoad(server.url, introspectionRequests(tokens[i]!))));
    const [issue1, issueN] = await measured(label.map((l) => `client_credentials RS256, ${l}`), servers.map((server) => httpLoad(server.url, [tokenRequest()])));
    const row = (scenario: string, one = intro1!, many = introN!): Row => ({
      scenario: `${scenario}, serve --workers ${workers}`,
      ours: many.rps,
      unit: "req/s",
      referenceLabel: "--workers 1",
      reference: one.rps,
      problem: failed(one, many),
    });
    return [row("introspection"), row("client_credentials, RS256 JWT", issue1, issueN)];
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}
