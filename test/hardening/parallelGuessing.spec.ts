import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { describePostgres, freshPostgresSchema, type PostgresSchema } from "../support/databases.js";
import { scaledMs } from "../support/deadline.js";
import { startInstance, type Instance } from "../support/instances.js";
import { parsePrometheusText, sampleValue } from "../support/prometheus.js";
import { grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

/*
 * The attack: send many wrong passwords for one name at once, with the right
 * one among them. If the lock is only read before the password check and the
 * failure only recorded after it, every guess in flight is checked, and the
 * right one wins. Each guess must take its place in the failure budget before
 * its password is checked, so at most the budget's worth are ever checked.
 */

const MAX_FAILURES = 5;
const MAX_FAILURES_PER_ADDRESS = 20;
const LOCKOUT_SECONDS = 300;
const GUESSES = 200;
/**
 * Where the right password goes in the burst: after twice the budget of wrong
 * ones, so the budget is spent by the time it is looked at, yet early enough
 * that, when the lock is read before the check and written after it, nothing
 * is locked yet when it arrives.
 */
const RIGHT_AT = 2 * MAX_FAILURES;

const WRONG = "invalid username or password";
const LOCKED = "too many failed sign-in attempts; try again later";
/** A burst of 200 takes seconds on an idle machine; on a loaded one, as many times longer as the load says. */
const BURST_TIMEOUT_MS = scaledMs(20_000);

/** What one sign-in attempt came to. */
type Outcome = "signed in" | "wrong" | "locked";

/** How one door is asked to check a password. */
type Attempt = (username: string, password: string) => Promise<Outcome>;

/** The password grant over REST, on /api/login/oauth/access_token. */
const restGrant =
  (baseUrl: string, forwardedFor?: string): Attempt =>
  async (username, password) => {
    const res = await postForm(
      `${baseUrl}/api/login/oauth/access_token`,
      { grant_type: "password", username, password },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret), ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}) },
    );
    if (res.status === 200 && res.body.access_token) return "signed in";
    return outcomeOf(res.body?.error_description, `REST ${res.status} ${res.text}`);
  };

/** The password grant over gRPC (grpc-js, one HTTP/2 connection): TokenService/Token. */
function grpcGrant(port: number): { attempt: Attempt; close(): void } {
  const { token, introspection, reflection } = grpcJsClients(port);
  introspection.close();
  reflection.close();
  return {
    attempt: async (username, password) => {
      const { response, error } = await grpcJsCall(
        token,
        "Token",
        { grant_type: "password", username, password },
        { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
      );
      if (response?.access_token) return "signed in";
      // grpc-js undoes the percent-encoding of grpc-message with decodeURI, which leaves "%3B" for ";".
      return outcomeOf(error && decodeURIComponent(error.details), `gRPC ${error?.code} ${error?.details}`);
    },
    close: () => token.close(),
  };
}

/** The login form (POST /login) of one pending authorize request, as one browser submits it; `postTo` may be another instance. */
async function loginForm(pageFrom: string, postTo = pageFrom): Promise<Attempt> {
  const jar = new CookieJar();
  const page = await browse(authorizeUrl(pageFrom), jar);
  assert.equal(page.status, 200);
  const fields = loginFormFields(await page.text());
  return async (username, password) => {
    const res = await submit(`${postTo}/login`, { ...fields, username, password }, jar);
    if (res.status === 303) return "signed in";
    const html = await res.text();
    if (res.status === 400 && html.includes("Too many failed sign-in attempts; try again later.")) return "locked";
    if (res.status === 400 && html.includes("Invalid username or password.")) return "wrong";
    throw new Error(`login form answered ${res.status}`);
  };
}

function outcomeOf(description: string | undefined, what: string): Outcome {
  if (description === WRONG) return "wrong";
  if (description === LOCKED) return "locked";
  throw new Error(`unexpected answer: ${what}`);
}

/**
 * One client_credentials grant, so the server has checked the client's secret
 * once before the burst: every guess then authenticates its client as a
 * working client's requests do, and what is rationed is the users' passwords.
 */
async function clientAlreadyKnown(baseUrl: string): Promise<void> {
  const res = await postForm(`${baseUrl}/api/login/oauth/access_token`, { grant_type: "client_credentials" }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
  assert.equal(res.status, 200);
}

/** identity_password_checks_total of one server: the passwords it has actually checked. */
async function passwordChecks(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/metrics`);
  assert.equal(res.status, 200);
  return sampleValue(parsePrometheusText(await res.text()), "identity_password_checks_total");
}

interface Burst {
  /** What the right password came to. */
  right: Outcome;
  /** How many answers of each kind. */
  tally: Record<Outcome, number>;
}

/**
 * The order the guesses of a burst reach a server in this process, played by
 * events rather than left to the network: the password checks are held as
 * they begin (the user lookup comes after the throttle took the attempt's
 * places) until the right password has reached the throttle. However loaded
 * the machine, the right one then arrives while the budget's worth of wrong
 * ones are under way and not one has failed yet: the moment a lock read
 * before the check and written after it would let it through.
 */
class HeldChecks {
  private readonly events: Array<() => void> = [];
  private gate!: () => void;
  private readonly gated = new Promise<void>((resolve) => (this.gate = resolve));
  /** Checks begun and held. */
  held = 0;
  /** Places the store refused (the budget was spent, by failures or by checks under way). */
  refusals = 0;

  constructor(server: RunningServer) {
    const { users, loginFailures } = server.store;
    const findByName = users.findByName;
    const reserveFailure = loginFailures.reserveFailure;
    users.findByName = async (...args) => {
      this.held++;
      this.changed();
      await this.gated;
      return findByName.apply(users, args);
    };
    loginFailures.reserveFailure = async (...args) => {
      const count = await reserveFailure.apply(loginFailures, args);
      if (count === undefined) {
        this.refusals++;
        this.changed();
      }
      return count;
    };
    this.restore = () => {
      users.findByName = findByName;
      loginFailures.reserveFailure = reserveFailure;
    };
  }

  readonly restore: () => void;

  /** Resolves once `done` holds; checked after every held check and every refusal. */
  async until(done: () => boolean): Promise<void> {
    while (!done()) await new Promise<void>((resolve) => this.events.push(resolve));
  }

  release(): void {
    this.restore();
    this.gate();
  }

  private changed(): void {
    for (const wake of this.events.splice(0)) wake();
  }
}

/**
 * GUESSES wrong passwords for `username` and the right one (at RIGHT_AT), all
 * in flight at once; `door(i)` says where guess i goes. With `server` (in
 * this process), the guesses before RIGHT_AT take the budget first, by
 * events (HeldChecks); without, the network orders them.
 */
async function burst(username: string, right: string, door: (i: number) => Attempt, server?: RunningServer): Promise<Burst> {
  const passwords = Array.from({ length: GUESSES }, (_, i) => `wrong-guess-${i}`);
  passwords.splice(RIGHT_AT, 0, right);
  const send = (from: number, to: number) => passwords.slice(from, to).map((password, i) => door(from + i)(username, password));
  let outcomes: Outcome[];
  if (!server) outcomes = await Promise.all(send(0, passwords.length));
  else outcomes = await ordered(server, MAX_FAILURES, send, RIGHT_AT, passwords.length);
  const tally: Record<Outcome, number> = { "signed in": 0, wrong: 0, locked: 0 };
  for (const o of outcomes) tally[o]++;
  return { right: outcomes[RIGHT_AT]!, tally };
}

/**
 * Send attempts [0, rightAt) and wait until `budget` of them are held in their
 * checks and every other one has been refused its place (they wait for the
 * checks under way, asking nothing more); then attempt rightAt, and wait
 * until it has been refused or has begun its check; then the rest, and let
 * the checks go on.
 */
async function ordered(server: RunningServer, budget: number, send: (from: number, to: number) => Promise<Outcome>[], rightAt: number, total: number): Promise<Outcome[]> {
  const held = new HeldChecks(server);
  try {
    const before = send(0, rightAt);
    await held.until(() => held.held >= budget && held.held + held.refusals >= rightAt);
    const [checks, refusals] = [held.held, held.refusals];
    const right = send(rightAt, rightAt + 1);
    await held.until(() => held.held > checks || held.refusals > refusals);
    const after = send(rightAt + 1, total);
    held.release();
    return await Promise.all([...before, ...right, ...after]);
  } finally {
    held.release();
  }
}

/**
 * What must hold after a burst at one name: the right password was refused,
 * no guess got in, and of the GUESSES + 1 attempts exactly the budget's worth
 * had their password checked (each of them answered "wrong"); the rest were
 * refused unchecked.
 */
function assertHeld(result: Burst, checks: number): void {
  assert.equal(result.right, "locked", "the right password, sent among the guesses, must be refused");
  assert.equal(result.tally["signed in"], 0);
  assert.equal(checks, result.tally.wrong, "every password checked answers 'wrong', and only those");
  assert.ok(checks <= MAX_FAILURES, `${checks} password checks ran; at most ${MAX_FAILURES} may`);
  assert.equal(checks, MAX_FAILURES, "the whole budget is usable");
  assert.equal(result.tally.locked, GUESSES + 1 - MAX_FAILURES);
}

describe("lockout under parallel guessing", function () {
  this.timeout(BURST_TIMEOUT_MS);
  const clock = new FakeClock();
  let server: RunningServer;
  beforeEach(async () => {
    server = await startTestServer({
      clock,
      overrides: { loginMaxFailures: MAX_FAILURES, loginMaxFailuresPerIp: 0, loginLockoutSeconds: LOCKOUT_SECONDS },
    });
    await clientAlreadyKnown(server.url);
  });
  afterEach(() => server.close());

  /** After the burst: still locked, whatever the door; the right password gets in once the lockout is over. */
  async function assertLockedThenLifted(attempts: Attempt[]): Promise<void> {
    for (const attempt of attempts) assert.equal(await attempt(TEST_USER.name, TEST_USER.password), "locked");
    clock.advanceSeconds(LOCKOUT_SECONDS - 1);
    assert.equal(await attempts[0]!(TEST_USER.name, TEST_USER.password), "locked");
    clock.advanceSeconds(1);
    assert.equal(await attempts[0]!(TEST_USER.name, TEST_USER.password), "signed in");
  }

  it("over REST: of 200 parallel wrong passwords and the right one, the password grant checks at most maxFailures and refuses the right one until the lockout ends", async () => {
    const rest = restGrant(server.url);
    const result = await burst(TEST_USER.name, TEST_USER.password, () => rest, server);
    assertHeld(result, await passwordChecks(server.url));
    await assertLockedThenLifted([rest, await loginForm(server.url)]);
  });

  it("over gRPC: of 200 parallel wrong passwords and the right one, TokenService/Token checks at most maxFailures and refuses the right one until the lockout ends", async () => {
    const grpc = grpcGrant(server.port);
    try {
      const result = await burst(TEST_USER.name, TEST_USER.password, () => grpc.attempt, server);
      assertHeld(result, await passwordChecks(server.url));
      await assertLockedThenLifted([grpc.attempt, restGrant(server.url)]);
    } finally {
      grpc.close();
    }
  });

  it("on the login form: of 200 parallel wrong passwords and the right one, POST /login checks at most maxFailures and refuses the right one until the lockout ends", async () => {
    const form = await loginForm(server.url);
    const result = await burst(TEST_USER.name, TEST_USER.password, () => form, server);
    assertHeld(result, await passwordChecks(server.url));
    await assertLockedThenLifted([await loginForm(server.url), restGrant(server.url)]);
  });

  it("counts names that do not exist the same way: 200 parallel guesses at one check at most maxFailures passwords", async () => {
    const rest = restGrant(server.url);
    const result = await burst("nobody-by-this-name", "no-password-is-right", () => rest, server);
    assert.equal(result.tally.wrong, MAX_FAILURES);
    assert.equal(result.tally.locked, GUESSES + 1 - MAX_FAILURES);
    assert.equal(await passwordChecks(server.url), MAX_FAILURES);
  });

  it("gives the budget back on a success: the right password within the budget clears the name's count", async () => {
    const rest = restGrant(server.url);
    for (let i = 0; i < MAX_FAILURES - 1; i++) assert.equal(await rest(TEST_USER.name, `wrong-${i}`), "wrong");
    assert.equal(await rest(TEST_USER.name, TEST_USER.password), "signed in");
    for (let i = 0; i < MAX_FAILURES - 1; i++) assert.equal(await rest(TEST_USER.name, `wrong-again-${i}`), "wrong");
    assert.equal(await rest(TEST_USER.name, TEST_USER.password), "signed in");
    assert.equal(await passwordChecks(server.url), 2 * MAX_FAILURES);
  });
});

describe("per-address lockout under parallel guessing", function () {
  this.timeout(BURST_TIMEOUT_MS);
  const clock = new FakeClock();
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({
      clock,
      overrides: {
        loginMaxFailures: MAX_FAILURES,
        loginMaxFailuresPerIp: MAX_FAILURES_PER_ADDRESS,
        loginLockoutSeconds: LOCKOUT_SECONDS,
        trustedProxies: ["127.0.0.1"],
      },
    });
    await clientAlreadyKnown(server.url);
  });
  after(() => server.close());

  it("checks at most maxFailuresPerAddress passwords of 200 parallel guesses at 200 names from one address, and refuses the right password from it until the lockout ends", async () => {
    const attacker = restGrant(server.url, "203.0.113.7");
    const names = Array.from({ length: GUESSES }, (_, i) => `victim-${i}`);
    // After twice the address's budget of wrong guesses, as RIGHT_AT is for a name.
    const rightAt = 2 * MAX_FAILURES_PER_ADDRESS;
    names.splice(rightAt, 0, TEST_USER.name);
    const send = (from: number, to: number) =>
      names.slice(from, to).map((name) => attacker(name, name === TEST_USER.name ? TEST_USER.password : `guess-for-${name}`));
    const outcomes = await ordered(server, MAX_FAILURES_PER_ADDRESS, send, rightAt, names.length);
    const checks = await passwordChecks(server.url);
    const count = (o: Outcome) => outcomes.filter((x) => x === o).length;

    assert.equal(outcomes[rightAt], "locked", "the right password from the guessing address must be refused");
    assert.equal(count("signed in"), 0);
    assert.equal(checks, count("wrong"));
    assert.ok(checks <= MAX_FAILURES_PER_ADDRESS, `${checks} password checks ran; at most ${MAX_FAILURES_PER_ADDRESS} may`);
    assert.equal(checks, MAX_FAILURES_PER_ADDRESS, "the whole budget is usable");

    // Refused unchecked at the address, the guesses took nothing from the names' budgets:
    // the same user signs in from elsewhere, and a name guessed once has its whole budget left there.
    const elsewhere = restGrant(server.url, "198.51.100.20");
    assert.equal(await elsewhere(TEST_USER.name, TEST_USER.password), "signed in");
    for (let i = 0; i < MAX_FAILURES; i++) assert.equal(await elsewhere(names.at(-1)!, `again-${i}`), "wrong");
    assert.equal(await elsewhere(names.at(-1)!, "again"), "locked");
    assert.equal(await attacker(TEST_USER.name, TEST_USER.password), "locked");

    clock.advanceSeconds(LOCKOUT_SECONDS);
    assert.equal(await attacker(TEST_USER.name, TEST_USER.password), "signed in");
  });
});

/*
 * The other side of reserving before checking: places taken by checks still
 * under way are not failures. Genuine sign-ins at once, more of them than a
 * budget holds, must all get in.
 */
describe("genuine sign-ins at once are not taken for guessing", function () {
  this.timeout(BURST_TIMEOUT_MS);
  const USERS = Array.from({ length: 12 }, (_, i) => ({ name: `member-${i}`, password: `pw-of-member-${i}` }));
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({
      config: { applications: [TEST_APP], users: [TEST_USER, ...USERS] },
      overrides: { loginMaxFailures: MAX_FAILURES, loginMaxFailuresPerIp: 3, loginLockoutSeconds: LOCKOUT_SECONDS },
    });
    await clientAlreadyKnown(server.url);
  });
  after(() => server.close());

  it("signs in every one of 30 parallel logins of one user, more than the name's budget", async () => {
    const rest = restGrant(server.url);
    const outcomes = await Promise.all(Array.from({ length: 30 }, () => rest(TEST_USER.name, TEST_USER.password)));
    assert.deepEqual(outcomes, Array(30).fill("signed in"));
  });

  it("signs in 12 users at once from one address, four times the address's budget", async () => {
    const rest = restGrant(server.url);
    const outcomes = await Promise.all(USERS.map((u) => rest(u.name, u.password)));
    assert.deepEqual(outcomes, Array(USERS.length).fill("signed in"));
  });
});

describePostgres("lockout under parallel guessing on two instances sharing PostgreSQL", () => {
  let schema: PostgresSchema;
  let instances: Instance[] = [];
  before(async function () {
    this.timeout(60_000);
    schema = freshPostgresSchema();
    const args = [
      "--database", schema.url,
      "--config", writeConfigFile({ applications: [TEST_APP], users: [TEST_USER] }),
      "--admin-token", ADMIN_TOKEN,
      "--login-max-failures", String(MAX_FAILURES),
      "--login-max-failures-per-ip", "0",
      "--login-lockout-seconds", String(LOCKOUT_SECONDS),
      "--db-query-timeout-ms", String(scaledMs(5000)),
      "--log-level", "error",
    ];
    // One after the other: the first migrates the schema.
    instances.push(await startInstance(args));
    instances.push(await startInstance(args));
    for (const instance of instances) await clientAlreadyKnown(instance.url);
  });
  after(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    instances = [];
    await schema?.drop();
  });

  it("of 200 parallel wrong passwords and the right one, spread over both instances and REST, gRPC and the login form, at most maxFailures are checked in all and the right one is refused on both", async function () {
    this.timeout(scaledMs(120_000));
    const [a, b] = instances as [Instance, Instance];
    const grpcs = [a, b].map((i) => grpcGrant(Number(new URL(i.url).port)));
    try {
      // A form whose page came from one instance is posted to the other: they share the pending request.
      const doors: Attempt[] = [restGrant(a.url), grpcs[1]!.attempt, await loginForm(a.url, b.url), restGrant(b.url), grpcs[0]!.attempt, await loginForm(b.url, a.url)];
      const result = await burst(TEST_USER.name, TEST_USER.password, (i) => doors[i % doors.length]!);
      const checks = (await passwordChecks(a.url)) + (await passwordChecks(b.url));
      assertHeld(result, checks);
      for (const door of doors) assert.equal(await door(TEST_USER.name, TEST_USER.password), "locked");
      assert.equal((await passwordChecks(a.url)) + (await passwordChecks(b.url)), checks);
    } finally {
      for (const g of grpcs) g.close();
    }
  });
});
