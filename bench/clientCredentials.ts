import { failed, type Row } from "./report.js";
import { httpLoad, measured, post, type TurnLoad } from "./load.js";
import { basicAuth, KINDS, tokenRequest, type Kind } from "./ours.js";
import { runNode } from "./processes.js";
import { OIDC_CLIENT, oidcResource } from "./references/shared.js";
import { TSX } from "./settings.js";

/** jose's RS256 signing rate, 16 in flight, in a process of its own per turn; `rps` is signatures per second. */
const joseSigning: TurnLoad = async (seconds) => {
  const rps = Number(await runNode([...TSX, "bench/references/joseSigning.ts", String(seconds)]));
  return { rps, p99Ms: 0, ok: Math.round(rps * seconds), okWithWarmup: 0, failures: 0 };
};

const kindLabel = (kind: Kind) => (kind === "opaque" ? "opaque" : `${kind} JWT`);

/**
 * client_credentials of each token kind against node-oidc-provider issuing
 * the same kind (and RS256 against jose's signing ceiling too), in turns.
 * Returns the rows and how many tokens our server issued.
 */
export async function clientCredentialsRows(oursUrl: string, oidcUrl: string): Promise<{ rows: Row[]; issued: number }> {
  const rows: Row[] = [];
  let issued = 0;
  const authorization = basicAuth(OIDC_CLIENT.id, OIDC_CLIENT.secret);
  for (const kind of KINDS) {
    const resource: Record<string, string> = kind === "opaque" ? {} : { resource: oidcResource(kind) };
    const oidcRequest = post("/token", { grant_type: "client_credentials", ...resource }, { authorization });
    const jose = kind === "RS256" ? [joseSigning] : [];
    const [ours, oidc, sign] = await measured(
      [`client_credentials ${kindLabel(kind)}: ours`, "node-oidc-provider", ...(jose.length ? ["jose RS256 sign, 16 in flight (signatures/s)"] : [])],
      [httpLoad(oursUrl, [tokenRequest(kind)]), httpLoad(oidcUrl, [oidcRequest]), ...jose],
    );
    issued += ours!.okWithWarmup;
    const scenario = `client_credentials, ${kindLabel(kind)}`;
    const row = { scenario, ours: ours!.rps, unit: "req/s", comparison: "atLeast" } as const;
    // The target (2x node-oidc-provider) is RS256 JWT's; the other kinds report their ratio.
    const target = kind === "RS256" ? 2 : undefined;
    rows.push({ ...row, referenceLabel: `node-oidc-provider, ${kindLabel(kind)}`, reference: oidc!.rps, target, problem: failed(ours!, oidc!) });
    if (sign) rows.push({ ...row, referenceLabel: "jose RS256 signing, 16 in flight", reference: sign.rps, target: 0.7, problem: failed(ours!) });
  }
  return { rows, issued };
}
