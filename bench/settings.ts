import { parseArgs } from "node:util";

const USAGE = `usage: npm run bench -- [--quick] [--seconds S] [--workers N] [--fast-paths | --audit | --admin-context | --delegation | --dpop]

  --quick       every row, shorter runs and smaller data sets (about 3 minutes)
  --seconds S   measured seconds of each load, split into turns (default 10, or 3 with --quick)
  --workers N   the workers row: serve --workers N against one process (default 2)
  --fast-paths  only our server with every fast path against itself with each off (IDENTITY_PLAIN_PATHS)
  --audit       only the audit rows: audit events on against --audit-events false
  --admin-context  only REST introspection after an admin call against a server that never had one
  --delegation  only client_credentials by private_key_jwt against client_secret_basic, and token exchange against client_credentials
  --dpop        only the DPoP row: userinfo with a DPoP-bound token against a Bearer token
`;

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    seconds: { type: "string" },
    workers: { type: "string", default: "2" },
    "fast-paths": { type: "boolean", default: false },
    audit: { type: "boolean", default: false },
    "admin-context": { type: "boolean", default: false },
    delegation: { type: "boolean", default: false },
    dpop: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

export const quick = flags.quick;
export const fastPathsOnly = flags["fast-paths"];
export const auditOnly = flags.audit;
export const adminContextOnly = flags["admin-context"];
export const delegationOnly = flags.delegation;
export const dpopOnly = flags.dpop;
export const workers = Number(flags.workers);
if (!Number.isInteger(workers) || workers < 2) throw new Error(`--workers: a whole number of at least 2, not ${flags.workers}`);

export const settings = {
  /** Measured seconds of each load in a row, over all its turns. */
  seconds: Number(flags.seconds ?? (quick ? 3 : 10)),
  /** Load before a row's first turn, not measured. */
  warmupSeconds: quick ? 1 : 3,
  /** Loads compared in one row alternate in this many short runs (see inTurns). */
  turns: quick ? 3 : 5,
  /** Stored tokens of the large-store row, against `smallStore`. */
  largeStore: quick ? 100_000 : 1_000_000,
  smallStore: 10_000,
  /** Tokens issued before the memory row reads the RSS. */
  issued: quick ? 20_000 : 1_000_000,
  /** Different tokens each introspection load cycles through; user tokens for userinfo (one scrypt each). */
  tokens: 100,
  userTokens: 16,
};

/** Node's flags for the TypeScript reference servers the bench starts. */
export const TSX = ["--import", "tsx"];
export const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
