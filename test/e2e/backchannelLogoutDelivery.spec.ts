import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import type { AuditEvent } from "../../src/shared/audit.js";
import { aBrowser, codeFlow, relyingParties, verifyAs, type RelyingParty } from "../support/backchannel.js";
import { describePostgres, freshPostgresSchema, freshSharedTestDatabase } from "../support/databases.js";
import { LogoutReceiver } from "../support/logoutTokens.js";
import { startTestServer, TEST_USER } from "../support/server.js";

async function auditEvents(server: RunningServer, event: string): Promise<AuditEvent[]> {
  await server.store.auditWriter.flush();
  return (await server.domain.auditEvents({ event, pageSize: 100 })).events;
}

/** The audit events `event` of `clientId`, once there is one (the audit follows the answer). */
async function auditedFor(server: RunningServer, event: string, clientId: string): Promise<AuditEvent[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = (await auditEvents(server, event)).filter((e) => e.clientId === clientId);
    if (found.length > 0 || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sidOf = (idToken: string) => decodeJwt(idToken).sid as string;

/** Signs TEST_USER in to `rp` in a fresh browser and signs out with the ID token as hint; the session's sid. */
async function signInAndOut(server: RunningServer, rp: RelyingParty): Promise<string> {
  const jar = aBrowser();
  const tokens = await codeFlow(server, rp, jar);
  const res = await fetch(`${server.url}/api/logout?id_token_hint=${tokens.id_token}`, { headers: { cookie: jar.header() }, redirect: "manual" });
  assert.equal(res.status, 200);
  return sidOf(tokens.id_token);
}

describe("back-channel logout delivery: retries, restarts, several instances", function () {
  this.timeout(60_000);

  describe("one instance", () => {
    const receiver = new LogoutReceiver();
    let server: RunningServer;
    let rp: RelyingParty;
    before(async () => {
      await receiver.start();
      const rps = relyingParties(receiver);
      rp = rps.told[0]!;
      server = await startTestServer({ config: { applications: [rp], users: [TEST_USER] }, backchannelLogout: { pollMs: 50, retryDelaysMs: [200, 200] } });
      verifyAs(receiver, server, rps.byPath);
    });
    beforeEach(() => receiver.clear());
    after(async () => {
      await server?.close();
      await receiver.close();
    });

    it("retries a delivery the relying party failed, after the pause, and audits it delivered once", async () => {
      receiver.failNext(1);
      const sid = await signInAndOut(server, rp);
      const [accepted] = await receiver.accepted(1);
      assert.deepEqual(receiver.received.map((r) => r.status), [500, 200]);
      assert.equal(accepted!.claims!.sid, sid);
      assert.notEqual(decodeJwt(receiver.received[0]!.token).jti, accepted!.claims!.jti, "each attempt is a token of its own");
      const delivered = await auditedFor(server, "backchannel_logout_delivered", rp.clientId);
      assert.equal(delivered.length, 1);
      assert.equal(delivered[0]!.details?.attempt, 2);
    });

    it("gives up after the last pause, audited as failed, and the queue is empty", async () => {
      receiver.failNext(3);
      await signInAndOut(server, rp);
      const failed = await auditedFor(server, "backchannel_logout_failed", rp.clientId);
      assert.equal(failed.length, 1);
      assert.equal(failed[0]!.details?.attempt, 3);
      assert.match(String(failed[0]!.details?.error), /answered HTTP 500/);
      assert.deepEqual(receiver.received.map((r) => r.status), [500, 500, 500]);
      assert.equal(await server.store.backchannelLogouts.pending(), 0);
    });
  });

  it("loses nothing to a restart between a failure and its retry", async () => {
    const receiver = await new LogoutReceiver().start();
    const rps = relyingParties(receiver);
    const rp = rps.told[0]!;
    const database = freshSharedTestDatabase();
    const options = { database: database.url, config: { applications: [rp], users: [TEST_USER] } };
    try {
      const first = await startTestServer({ ...options, backchannelLogout: { pollMs: 50, retryDelaysMs: [1_000] } });
      verifyAs(receiver, first, rps.byPath);
      receiver.failNext(1);
      const sid = await signInAndOut(first, rp);
      while (receiver.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      await first.close();
      assert.equal(receiver.received.filter((r) => r.status === 200).length, 0);

      const second = await startTestServer({ ...options, backchannelLogout: { pollMs: 50, retryDelaysMs: [1_000] } });
      try {
        verifyAs(receiver, second, rps.byPath);
        const [accepted] = await receiver.accepted(1);
        assert.equal(accepted!.claims!.sid, sid);
        assert.deepEqual(receiver.received.map((r) => r.status), [500, 200]);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
      await database.dispose();
    }
  });

  describePostgres("two instances on PostgreSQL", () => {
    it("deliver each logout token once", async () => {
      const receiver = await new LogoutReceiver().start();
      const rps = relyingParties(receiver);
      const schema = freshPostgresSchema();
      // Behind a load balancer every instance announces the same issuer.
      const options = { database: schema.url, config: { applications: rps.told, users: [TEST_USER] }, overrides: { issuer: "http://identity.test" }, backchannelLogout: { pollMs: 20 } };
      const servers: RunningServer[] = [];
      try {
        servers.push(await startTestServer(options), await startTestServer(options));
        verifyAs(receiver, servers[0]!, rps.byPath);
        // Sessions and their clients written straight to the store and ended there: no instance is woken, both poll.
        const { store } = servers[0]!;
        const user = await store.users.findByName(TEST_USER.name);
        const sids: string[] = [];
        for (let i = 0; i < 30; i++) {
          const sid = `sid-${i}-${Math.random().toString(36).slice(2)}`;
          const idHash = `hash-${sid}`;
          await store.sessions.insert({ idHash, sid, userId: user!.id, authTime: 0, createdAt: Date.now(), expiresAt: Date.now() + 3_600_000 });
          for (const rp of rps.told) await store.sessions.addClient(sid, rp.clientId, Date.now() + 3_600_000);
          sids.push(idHash);
        }
        for (const idHash of sids) await store.sessions.end(idHash, "admin_revoked", Date.now());
        const accepted = await receiver.accepted(60, 20_000).catch((err: Error) => {
          throw new Error(`${err.message}: ${[...new Set(receiver.received.map((r) => r.error))].join(", ")}`);
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(receiver.received.length, 60, "60 calls for 30 sessions of two relying parties: none twice");
        assert.equal(new Set(accepted.map((r) => `${r.claims!.aud} ${r.claims!.sid}`)).size, 60);
        await Promise.all(servers.map((s) => s.store.auditWriter.flush()));
        assert.equal((await auditEvents(servers[0]!, "backchannel_logout_delivered")).length, 60, "the audit trail (shared) counts each delivery once");
      } finally {
        for (const server of servers) await server.close();
        await receiver.close();
        await schema.drop();
      }
    });
  });
});
