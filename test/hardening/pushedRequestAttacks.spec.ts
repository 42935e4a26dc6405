import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { clientKey, type ClientKey } from "../support/highAssurance.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";

const PAR_PATH = "/api/oauth/par";
const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const CALLBACK = TEST_APP.redirectUris[0]!;
const OTHER_APP = { ...TEST_APP, name: "other", clientId: "client-other", clientSecret: "secret-of-the-other-client" };

/** Push a code request as `app`, whatever the answer. */
const tryPush = (server: Pick<RunningServer, "url">, app: { clientId: string; clientSecret: string } = TEST_APP, state = "pushed-state") =>
  postForm(`${server.url}${PAR_PATH}`, { response_type: "code", redirect_uri: CALLBACK, scope: "openid", state }, { authorization: basicAuth(app.clientId, app.clientSecret) });

/** Push a code request as `app`; its request_uri. */
async function push(server: Pick<RunningServer, "url">, app: { clientId: string; clientSecret: string } = TEST_APP, state = "pushed-state"): Promise<string> {
  const res = await tryPush(server, app, state);
  assert.equal(res.status, 201, res.text);
  return res.body.request_uri as string;
}

/** A push refused for the client's cap: RFC 9126 §2.3's 429, as RFC 6749 JSON with Retry-After. */
function overCap(res: HttpResult, cap: number): void {
  assert.equal(res.status, 429, res.text);
  assert.match(res.headers.get("content-type")!, /^application\/json/);
  assert.equal(res.headers.get("cache-control"), "no-store");
  assert.ok(Number(res.headers.get("retry-after")) > 0, "Retry-After");
  assert.equal(res.body.error, "temporarily_unavailable");
  assert.match(res.body.error_description, new RegExp(`at most ${cap} at once`));
}

/** The authorize endpoint with only client_id and request_uri, as PAR's browser leg sends them. */
const usePushed = (server: Pick<RunningServer, "url">, requestUri: string, clientId = TEST_APP.clientId) =>
  browse(authorizeUrl(server.url, { client_id: clientId, request_uri: requestUri, redirect_uri: undefined, response_type: undefined, scope: undefined, state: undefined }), new CookieJar());

/** A refusal shown to the user: a page, never a redirect, naming the error. */
async function shown(res: Response, error: string): Promise<void> {
  assert.equal(res.status, 400);
  assert.equal(res.headers.get("location"), null);
  assert.match(await res.text(), new RegExp(error));
}

/** A refusal sent back to the client's registered redirect_uri. */
function sentBack(res: Response, error: string): void {
  assert.equal(res.status, 303, `expected a redirect, got ${res.status}`);
  const location = new URL(res.headers.get("location")!);
  assert.equal(`${location.origin}${location.pathname}`, CALLBACK);
  assert.equal(location.searchParams.get("error"), error);
}

/** Issue 45, attack tests: a pushed request_uri replayed, late, or used by another client (also in parallel); request objects not signed by the client. */
describe("pushed authorization requests and request objects under attack", () => {
  let server: RunningServer;
  let clock: FakeClock;
  let key: ClientKey;
  let foreign: ClientKey;
  const JAR_APP = { name: "jar", clientId: "client-jar", redirectUris: [CALLBACK], grantTypes: ["authorization_code"], tokenEndpointAuthMethod: "private_key_jwt" };

  before(async () => {
    [key, foreign] = await Promise.all([clientKey("ES256", "registered"), clientKey("ES256", "registered")]);
    clock = new FakeClock();
    server = await startTestServer({ clock, config: { applications: [TEST_APP, OTHER_APP, { ...JAR_APP, jwks: { keys: [key.publicJwk] } }], users: [TEST_USER] } });
  });
  after(() => server.close());

  it("refuses a replayed request_uri, showing the error and never redirecting", async () => {
    const requestUri = await push(server);
    assert.equal((await usePushed(server, requestUri)).status, 200, "the first use opens the sign-in");
    await shown(await usePushed(server, requestUri), "invalid_request_uri");
  });

  it("refuses a request_uri used by another client, and leaves it to the client that pushed it", async () => {
    const requestUri = await push(server);
    await shown(await usePushed(server, requestUri, OTHER_APP.clientId), "invalid_request_uri");
    await shown(await usePushed(server, requestUri, "no-such-client"), "invalid_request_uri");
    assert.equal((await usePushed(server, requestUri)).status, 200);
  });

  it("opens one sign-in when a request_uri is used 20 times at once, by its client and another", async () => {
    const requestUri = await push(server);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => usePushed(server, requestUri, i % 2 ? OTHER_APP.clientId : TEST_APP.clientId)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, ...Array(19).fill(400)]);
  });

  it("refuses a request_uri after its 60 seconds", async () => {
    const requestUri = await push(server);
    clock.advanceSeconds(60);
    await shown(await usePushed(server, requestUri), "invalid_request_uri");
  });

  it("never fetches a request_uri that is a URL: request_uri_not_supported, and no call", async () => {
    let calls = 0;
    const bait: Server = createServer((_req, res) => {
      calls++;
      res.end("eyJhbGciOiJub25lIn0.e30.");
    });
    await new Promise<void>((resolve) => bait.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(bait.address() as AddressInfo).port}/request.jwt`;
      sentBack(await browse(authorizeUrl(server.url, { request_uri: url }), new CookieJar()), "request_uri_not_supported");
      await shown(await usePushed(server, url), "request_uri_not_supported");
      assert.equal(calls, 0);
    } finally {
      await new Promise((resolve) => bait.close(resolve));
    }
  });

  describe("request objects", () => {
    const now = () => Math.floor(clock.now() / 1000);
    const claims = (over: Record<string, unknown> = {}) => ({
      iss: JAR_APP.clientId, aud: server.issuer, iat: now(), exp: now() + 60, jti: randomUUID(), client_id: JAR_APP.clientId,
      response_type: "code", redirect_uri: CALLBACK, scope: "openid", state: "signed", ...over,
    });
    const signed = (signer: ClientKey, over: Record<string, unknown> = {}) =>
      new SignJWT(claims(over)).setProtectedHeader({ alg: "ES256", kid: signer.kid }).sign(signer.privateKey);
    const handSigned = (header: Record<string, unknown>, hmacKey?: string) => {
      const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
      const input = `${part(header)}.${part(claims())}`;
      return `${input}.${hmacKey === undefined ? "" : createHmac("sha256", hmacKey).update(input).digest("base64url")}`;
    };
    /** At authorize, beside the client_id and the registered redirect_uri (so the error may go back). */
    const atAuthorize = (request: string, clientId = JAR_APP.clientId) =>
      browse(authorizeUrl(server.url, { client_id: clientId, request, response_type: "code", scope: undefined }), new CookieJar());
    /** At PAR, authenticated by TEST_APP's secret, which has no keys to verify one with. */
    const atPar = (request: string) =>
      postForm(`${server.url}${PAR_PATH}`, { request }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    /** At PAR as the client that signed it, authenticated by a client assertion (RFC 7523) signed with the same key. */
    const atParAsSigner = async (request: string) => {
      const assertion = await new SignJWT({ iss: JAR_APP.clientId, sub: JAR_APP.clientId, aud: server.issuer, jti: randomUUID(), iat: now(), exp: now() + 60 })
        .setProtectedHeader({ alg: "ES256", kid: key.kid })
        .sign(key.privateKey);
      return postForm(`${server.url}${PAR_PATH}`, { request, client_id: JAR_APP.clientId, client_assertion_type: ASSERTION_TYPE, client_assertion: assertion });
    };
    /** "accepted", or the error of a refusal: JSON at PAR, sent back to the redirect_uri at authorize. */
    const outcome = async (answer: Promise<Response | HttpResult>): Promise<string> => {
      const res = await answer;
      if (res.status === 200 || res.status === 201) return "accepted";
      if (res instanceof Response) return new URL(res.headers.get("location") ?? "http://none/").searchParams.get("error") ?? `status ${res.status}`;
      return res.body?.error ?? `status ${res.status}`;
    };

    it("accepts one signed by the client's registered key (the baseline)", async () => {
      assert.equal((await atAuthorize(await signed(key))).status, 200);
    });

    it("refuses alg none, at authorize and at PAR, with invalid_request_object", async () => {
      sentBack(await atAuthorize(handSigned({ alg: "none" })), "invalid_request_object");
      const res = await atPar(handSigned({ alg: "none" }));
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_request_object");
    });

    it("refuses a foreign key bearing the registered key's kid, and HS256 keyed with anything", async () => {
      sentBack(await atAuthorize(await signed(foreign)), "invalid_request_object");
      sentBack(await atAuthorize(handSigned({ alg: "HS256", kid: key.kid }, JSON.stringify(key.publicJwk))), "invalid_request_object");
      sentBack(await atAuthorize(handSigned({ alg: "HS256" }, TEST_APP.clientSecret), TEST_APP.clientId), "invalid_request_object");
    });

    it("refuses one for another audience, from another issuer, naming another client, or expired", async () => {
      for (const over of [{ aud: "https://elsewhere.example" }, { iss: OTHER_APP.clientId }, { client_id: OTHER_APP.clientId }, { exp: now() - 1 }]) {
        sentBack(await atAuthorize(await signed(key, over)), "invalid_request_object");
      }
    });

    it("refuses a request object used a second time, at PAR after authorize and at authorize after PAR: its jti is spent", async () => {
      const first = await signed(key);
      assert.equal((await atAuthorize(first)).status, 200);
      const replayed = await atParAsSigner(first);
      assert.equal(replayed.status, 400, replayed.text);
      assert.equal(replayed.body.error, "invalid_request_object");
      assert.match(replayed.body.error_description, /used before/);
      const second = await signed(key);
      assert.equal((await atParAsSigner(second)).status, 201);
      sentBack(await atAuthorize(second), "invalid_request_object");
    });

    it("lets one of 20 concurrent uses of one request object through, at authorize and at PAR", async () => {
      const object = await signed(key);
      const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => outcome(i % 2 ? atParAsSigner(object) : atAuthorize(object))));
      assert.deepEqual(outcomes.sort(), ["accepted", ...Array(19).fill("invalid_request_object")]);
    });

    it("refuses a request object carrying a request or request_uri of its own", async () => {
      sentBack(await atAuthorize(await signed(key, { request_uri: "urn:ietf:params:oauth:request_uri:x" })), "invalid_request_object");
    });

    it("never redirects to a redirect_uri that only a refused request object names", async () => {
      const res = await browse(
        authorizeUrl(server.url, { client_id: JAR_APP.clientId, request: handSigned({ alg: "none" }), redirect_uri: undefined }),
        new CookieJar(),
      );
      await shown(res, "invalid_request_object");
    });
  });
});

describe("pushed requests per client, capped", () => {
  const CAP = 3;
  let server: RunningServer;
  let clock: FakeClock;

  before(async () => {
    clock = new FakeClock();
    server = await startTestServer({ clock, overrides: { pushedRequestsMaxPerClient: CAP }, config: { applications: [TEST_APP, OTHER_APP], users: [TEST_USER] } });
  });
  after(() => server.close());

  it("stores the cap of 8 concurrent pushes, refuses the rest with a clean 429, and makes room as requests are used or expire", async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => tryPush(server)));
    const stored = answers.filter((a) => a.status === 201);
    assert.equal(stored.length, CAP);
    for (const refused of answers.filter((a) => a.status !== 201)) overCap(refused, CAP);
    assert.equal((await tryPush(server, OTHER_APP)).status, 201, "another client's room is its own");
    assert.equal((await usePushed(server, stored[0]!.body.request_uri)).status, 200);
    assert.equal((await tryPush(server)).status, 201, "a used request makes room");
    overCap(await tryPush(server), CAP);
    clock.advanceSeconds(60);
    assert.equal((await tryPush(server)).status, 201, "expired requests make room");
  });
});

describeEachDatabase("pushed requests across instances sharing one database", (ctx) => {
  const CAP = 4;
  let servers: RunningServer[] = [];

  before(async () => {
    const config = { applications: [TEST_APP, OTHER_APP], users: [TEST_USER] };
    const overrides = { pushedRequestsMaxPerClient: CAP };
    // One after the other: the second finds the database the first migrated.
    servers.push(await startTestServer({ config, database: ctx.url, overrides }));
    servers.push(await startTestServer({ config, database: ctx.url, overrides }));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
  });

  it("serves a request pushed at one instance at the other, once, also when both see it at once", async () => {
    const requestUri = await push(servers[0]!);
    assert.equal((await usePushed(servers[1]!, requestUri)).status, 200);
    await shown(await usePushed(servers[0]!, requestUri), "invalid_request_uri");
    for (let round = 0; round < 3; round++) {
      const raced = await push(servers[round % 2]!);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => usePushed(servers[i % 2]!, raced, i % 3 ? TEST_APP.clientId : OTHER_APP.clientId)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, ...Array(9).fill(400)], `round ${round}`);
    }
  });

  it("holds one client to its cap when 10 pushes reach both instances at once", async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => tryPush(servers[i % 2]!, OTHER_APP)));
    assert.equal(answers.filter((a) => a.status === 201).length, CAP);
    for (const refused of answers.filter((a) => a.status !== 201)) overCap(refused, CAP);
  });
  // Each :memory: server would have a database of its own.
}, BACKENDS.filter((b) => b.name !== "SQLite :memory:"));
