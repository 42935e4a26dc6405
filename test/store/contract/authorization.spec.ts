import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { AuthorizationCodeRecord } from "../../../src/store/authorizationCodes.js";
import { hash, HOUR, T0 } from "../../support/storeFixtures.js";
import type { DeviceCodeRecord } from "../../../src/store/deviceCodes.js";
import type { PushedAuthorizationRequestRecord } from "../../../src/store/pushedAuthorizationRequests.js";
import { id, assertConflict } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: authorization", (ctx) => {
  describe("authorization codes", () => {
    const aCode = (over: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord => ({
      codeHash: hash(),
      familyId: randomUUID(),
      clientId: "client",
      userId: randomUUID(),
      redirectUri: "https://app.example/cb",
      scope: "openid",
      nonce: "n-0",
      codeChallenge: "challenge",
      codeChallengeMethod: "S256",
      authTime: T0 / 1000,
      claims: null,
      createdAt: T0,
      expiresAt: T0 + 60_000,
      consumedAt: null,
      replayedAt: null,
      ...over,
    });

    it("round-trips by hash, with or without a nonce and a challenge", async () => {
      const withAll = aCode({ claims: '{"id_token":{"name":null}}', resources: ["https://a.example/", "https://b.example/"] });
      const bare = aCode({ nonce: null, codeChallenge: null, codeChallengeMethod: null });
      for (const c of [withAll, bare]) await ctx.store.authorizationCodes.insert(c);
      assert.deepEqual(await ctx.store.authorizationCodes.findByHash(withAll.codeHash), withAll);
      assert.deepEqual(await ctx.store.authorizationCodes.findByHash(bare.codeHash), bare);
      assert.equal(await ctx.store.authorizationCodes.findByHash(hash()), undefined);
    });

    it("lets exactly one of 50 concurrent consumes of one code win, and none after it", async () => {
      const code = aCode();
      await ctx.store.authorizationCodes.insert(code);
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => ctx.store.authorizationCodes.consume(code.codeHash, T0 + i)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal((await ctx.store.authorizationCodes.findByHash(code.codeHash))?.consumedAt, T0 + results.indexOf(true));
      assert.equal(await ctx.store.authorizationCodes.consume(code.codeHash, T0 + 100), false);
      assert.equal(await ctx.store.authorizationCodes.consume(hash(), T0), false);
    });

    it("records a replay once, keeping its first time", async () => {
      const code = aCode({ consumedAt: T0 });
      await ctx.store.authorizationCodes.insert(code);
      assert.equal(await ctx.store.authorizationCodes.wasReplayed(code.codeHash), false);
      await ctx.store.authorizationCodes.markReplayed(code.codeHash, T0 + 1);
      await ctx.store.authorizationCodes.markReplayed(code.codeHash, T0 + 2);
      assert.equal(await ctx.store.authorizationCodes.wasReplayed(code.codeHash), true);
      assert.equal((await ctx.store.authorizationCodes.findByHash(code.codeHash))?.replayedAt, T0 + 1);
    });
  });

  describe("authorization requests", () => {
    it("round-trips by id, and lets exactly one of 50 concurrent takes of one request win", async () => {
      const request = { id: id(), csrfHash: hash(), request: '{"client_id":"c"}', createdAt: T0, expiresAt: T0 + HOUR };
      await ctx.store.authorizationRequests.insert(request);
      assert.deepEqual(await ctx.store.authorizationRequests.findById(request.id), request);
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.authorizationRequests.take(request.id)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.authorizationRequests.findById(request.id), undefined);
    });
  });

  describe("pushed authorization requests", () => {
    const aPushedRequest = (over: Partial<PushedAuthorizationRequestRecord> = {}): PushedAuthorizationRequestRecord => ({
      requestUriHash: hash(), clientId: `client-${id()}`, params: '{"response_type":"code","state":"s"}', expiresAt: T0 + 60_000, ...over,
    });

    const CAP = 10;
    const insert = (r: PushedAuthorizationRequestRecord, now = T0) => ctx.store.pushedAuthorizationRequests.insert(r, CAP, now);

    it("lets exactly one of 50 concurrent takes win, and returns the parameters once", async () => {
      const pushed = aPushedRequest();
      assert.equal(await insert(pushed), true);
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.pushedAuthorizationRequests.take(pushed.requestUriHash, pushed.clientId, T0)));
      assert.deepEqual(results.filter((r) => r !== undefined), [pushed.params]);
      assert.equal(await ctx.store.pushedAuthorizationRequests.take(pushed.requestUriHash, pushed.clientId, T0), undefined);
    });

    it("refuses another client and an expired row, leaving the row to its own client until it expires", async () => {
      const pushed = aPushedRequest();
      await insert(pushed);
      assert.equal(await ctx.store.pushedAuthorizationRequests.take(pushed.requestUriHash, "another-client", T0), undefined);
      assert.equal(await ctx.store.pushedAuthorizationRequests.take(pushed.requestUriHash, pushed.clientId, pushed.expiresAt), undefined);
      assert.equal(await ctx.store.pushedAuthorizationRequests.take(pushed.requestUriHash, pushed.clientId, pushed.expiresAt - 1), pushed.params);
    });

    it("stores exactly the cap of 25 concurrent pushes of one client, and leaves another client's room alone", async () => {
      const clientId = `client-${id()}`;
      const pushes = Array.from({ length: 25 }, () => aPushedRequest({ clientId }));
      const stored = await Promise.all(pushes.map((p) => insert(p)));
      assert.equal(stored.filter(Boolean).length, CAP);
      const [row] = await ctx.db("pushed_authorization_requests").where({ client_id: clientId }).count({ n: "*" });
      assert.equal(Number(row!.n), CAP);
      assert.equal(await insert(aPushedRequest({ clientId })), false, "full, one after the other too");
      assert.equal(await insert(aPushedRequest()), true, "another client has its own room");
    });

    it("counts only live rows: a taken or expired one makes room again", async () => {
      const clientId = `client-${id()}`;
      const pushes = Array.from({ length: CAP }, (_, i) => aPushedRequest({ clientId, expiresAt: T0 + 1000 + i }));
      for (const p of pushes) assert.equal(await insert(p), true);
      assert.equal(await insert(aPushedRequest({ clientId })), false);
      await ctx.store.pushedAuthorizationRequests.take(pushes[CAP - 1]!.requestUriHash, clientId, T0);
      assert.equal(await insert(aPushedRequest({ clientId })), true, "a taken row is gone");
      assert.equal(await insert(aPushedRequest({ clientId })), false);
      assert.equal(await insert(aPushedRequest({ clientId }), T0 + 1000), true, "the first row expired at T0 + 1000");
    });
  });

  describe("request object jtis", () => {
    it("lets exactly one of 20 concurrent uses of one jti through, and takes it again once its row has expired", async () => {
      const key = hash();
      const results = await Promise.all(Array.from({ length: 20 }, () => ctx.store.requestObjectJtis.useOnce(key, T0 + 60_000, T0)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.requestObjectJtis.useOnce(key, T0 + 120_000, T0 + 59_999), false);
      assert.equal(await ctx.store.requestObjectJtis.useOnce(key, T0 + 120_000, T0 + 60_000), true);
    });
  });

  describe("device codes", () => {
    const aDeviceCode = (over: Partial<DeviceCodeRecord> = {}): DeviceCodeRecord => ({
      deviceCodeHash: hash(), userCode: id().slice(0, 8).toUpperCase(), clientId: "client", scope: "openid", status: "pending",
      userId: null, authTime: null, intervalSeconds: 5, lastPolledAt: 0, createdAt: T0, expiresAt: T0 + 600_000, ...over,
    });

    it("refuses a second code with the same user code, and finds one by user code until it expires", async () => {
      const code = aDeviceCode();
      await ctx.store.deviceCodes.insert(code);
      await assertConflict(ctx.store.deviceCodes.insert(aDeviceCode({ userCode: code.userCode })), "device code");
      assert.deepEqual(await ctx.store.deviceCodes.findByUserCode(code.userCode, T0), code);
      assert.equal(await ctx.store.deviceCodes.findByUserCode(code.userCode, code.expiresAt), undefined);
    });

    it("decides a pending code once, and answers polls: too fast grows the interval, and an approved code is claimed once", async () => {
      const code = aDeviceCode();
      await ctx.store.deviceCodes.insert(code);
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0)).kind, "polled");
      const fast = await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 4999);
      assert.equal(fast.kind, "too_fast");
      assert.equal(fast.kind === "too_fast" && fast.record.intervalSeconds, 10);
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 9999)).kind, "too_fast");
      assert.equal(await ctx.store.deviceCodes.decide(code.userCode, "approved", "user-1", 1234, T0), true);
      assert.equal(await ctx.store.deviceCodes.decide(code.userCode, "denied", "user-1", 1234, T0), false);
      const claimed = await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 60_000);
      assert.equal(claimed.kind, "claimed");
      assert.equal(claimed.kind === "claimed" && claimed.record.userId, "user-1");
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 120_000)).kind, "polled");
      assert.equal((await ctx.store.deviceCodes.poll(hash(), "client", T0)).kind, "unknown");
      assert.equal((await ctx.store.deviceCodes.poll(code.deviceCodeHash, "another-client", T0 + 180_000)).kind, "unknown");
    });

    it("gives an approved code to exactly one of 20 concurrent polls", async () => {
      const code = aDeviceCode({ intervalSeconds: 0 });
      await ctx.store.deviceCodes.insert(code);
      await ctx.store.deviceCodes.decide(code.userCode, "approved", "user-1", 1234, T0);
      const polls = await Promise.all(Array.from({ length: 20 }, () => ctx.store.deviceCodes.poll(code.deviceCodeHash, code.clientId, T0 + 1000)));
      assert.equal(polls.filter((p) => p.kind === "claimed").length, 1);
    });
  });
});
