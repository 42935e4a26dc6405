import fc from "fast-check";
import type { Logger } from "../../../src/shared/log.js";
import type { RunningServer } from "../../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, signIn } from "../browserless.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../server.js";
import { fuzzEndpoints, openConnections, type FuzzEndpoint } from "./endpoints.js";
import type { KnownValues } from "./values.js";

export const FUZZ_MAX_BODY_BYTES = 65536;

/**
 * The warn and error lines of a server under test; an exception logged is a
 * finding. Lower levels are dropped: under fuzzing there is one per request.
 */
export class WarningLog implements Logger {
  readonly lines: Array<{ level: "warn" | "error"; message: string; fields?: Record<string, unknown> }> = [];
  debug(): void {}
  info(): void {}
  infoPlain(): void {}
  warn(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: "warn", message, fields });
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: "error", message, fields });
  }
  enabled(level: string): boolean {
    return level === "warn" || level === "error";
  }
  /** Error lines about an exception (they carry its message and stack): a bug, whatever the caller sent. */
  unexpected() {
    return this.lines.filter((l) => l.level === "error" && l.fields?.stack !== undefined);
  }
}

/** The server to fuzz: the test application (with refresh tokens and a provider) on `database`, else the default test database. */
export async function startFuzzServer(logger: Logger, database?: string): Promise<RunningServer> {
  return startTestServer({
    database,
    logger,
    config: { applications: [{ ...TEST_APP, refreshExpireInHours: 1, providers: [TEST_PROVIDER.name] }], users: [TEST_USER], providers: [TEST_PROVIDER] },
    // Fuzz cases come from one address; an IP lockout would stop them at the door.
    overrides: { loginMaxFailuresPerIp: 0 },
  });
}

/** Live values of every kind, so that cases can reach past authentication. */
export async function gatherKnownValues(server: RunningServer): Promise<KnownValues> {
  const token = `${server.url}/api/login/oauth/access_token`;
  const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };
  const user = await postForm(token, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile email" }, basic);
  const client = await postForm(token, { grant_type: "client_credentials" }, basic);
  if (user.status !== 200 || client.status !== 200) throw new Error(`cannot get tokens: ${JSON.stringify(user.body)} ${JSON.stringify(client.body)}`);
  const signedIn = await signIn(server);
  const jar = new CookieJar();
  const fields = loginFormFields(await (await browse(authorizeUrl(server.url), jar)).text());
  return {
    clientId: TEST_APP.clientId,
    clientSecret: TEST_APP.clientSecret,
    username: TEST_USER.name,
    password: TEST_USER.password,
    redirectUri: TEST_APP.redirectUris[0]!,
    accessToken: user.body.access_token,
    refreshToken: user.body.refresh_token,
    idToken: user.body.id_token,
    clientToken: client.body.access_token,
    code: signedIn.location.searchParams.get("code")!,
    sessionCookie: signedIn.jar.get("identity_session")!,
    csrfToken: fields.csrf_token,
    pendingRequest: fields.request,
    adminToken: ADMIN_TOKEN,
  };
}

export interface EndpointResult {
  name: string;
  runs: number;
  failed: boolean;
  report?: string;
  ms: number;
}

export interface FuzzRunOptions {
  /** Cases per endpoint, or a function of the endpoint's name. */
  numRuns: number | ((endpoint: string) => number);
  seed: number;
  /** Only endpoints whose name matches. */
  only?: RegExp;
  /** Endpoints fuzzed at the same time (each one's cases run one after another). */
  parallel?: number;
  /** Shrink a failure to a minimal case (slow against a server). */
  shrink?: boolean;
  onResult?: (result: EndpointResult) => void;
}

/** Fuzz every endpoint against `server`; returns one result per endpoint. */
export async function fuzzServer(server: RunningServer, options: FuzzRunOptions): Promise<EndpointResult[]> {
  const known = await gatherKnownValues(server);
  const connections = openConnections(server);
  try {
    const endpoints = fuzzEndpoints({ server, known, maxBodyBytes: FUZZ_MAX_BODY_BYTES, providerName: TEST_PROVIDER.name }, connections).filter(
      (e) => !options.only || options.only.test(e.name),
    );
    const results: EndpointResult[] = [];
    const queue = [...endpoints];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const result = await fuzzOne(next, options);
        results.push(result);
        options.onResult?.(result);
      }
    };
    await Promise.all(Array.from({ length: options.parallel ?? 4 }, worker));
    return results;
  } finally {
    connections.close();
  }
}

async function fuzzOne(e: FuzzEndpoint, options: FuzzRunOptions): Promise<EndpointResult> {
  const started = Date.now();
  const details = await fc.check(fc.asyncProperty(e.arbitrary, (value) => e.run(value)), {
    numRuns: typeof options.numRuns === "number" ? options.numRuns : options.numRuns(e.name),
    seed: options.seed,
    endOnFailure: !options.shrink,
  });
  return {
    name: e.name,
    runs: details.numRuns,
    failed: details.failed,
    report: details.failed ? failureReport(details) : undefined,
    ms: Date.now() - started,
  };
}

/** The violation and the case that caused it, with long values abbreviated so a report stays readable. */
function failureReport(details: fc.RunDetails<[unknown]>): string {
  const brief = (_key: string, value: unknown) => {
    if (typeof value === "string" && value.length > 160) return `${value.slice(0, 120)}…(${value.length} chars)`;
    if (value instanceof Uint8Array) {
      const text = Buffer.from(value.subarray(0, 160)).toString("latin1");
      return `bytes(${value.length}): ${JSON.stringify(text)}${value.length > 160 ? "…" : ""}`;
    }
    return value;
  };
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  return `${error}\n  case (seed ${details.seed}, path ${details.counterexamplePath}): ${JSON.stringify(details.counterexample?.[0], brief)}`;
}
