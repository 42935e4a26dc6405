import assert from "node:assert/strict";
import { startTestServer } from "../support/server.js";

const METRICS_TOKEN = "scrape-me-0123456789abcdef";

describe("metrics open to anyone", () => {
  it("are closed to callers without --metrics-token's bearer token, on the main port and on a port of its own", async () => {
    for (const metrics of ["same", { port: 0 }] as const) {
      const server = await startTestServer({ overrides: { metrics, metricsToken: METRICS_TOKEN } });
      try {
        const url = server.metricsUrl ?? `${server.url}/metrics`;
        for (const authorization of [undefined, "Bearer wrong", `Bearer ${METRICS_TOKEN}x`, `Basic ${METRICS_TOKEN}`, `Bearer ${METRICS_TOKEN.slice(0, -1)}`]) {
          const res = await fetch(url, { headers: authorization ? { authorization } : {} });
          assert.equal(res.status, 401, `${JSON.stringify(metrics)} ${authorization}`);
          assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
          assert.doesNotMatch(await res.text(), /identity_http_requests_total/);
        }
        const res = await fetch(url, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
        assert.equal(res.status, 200);
        assert.match(await res.text(), /identity_http_requests_total/);
        // The probes stay open: orchestrators call them without credentials.
        assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      } finally {
        await server.close();
      }
    }
  });

  it("are served on --metrics-host when on a port of their own, off the public address", async () => {
    const server = await startTestServer({ overrides: { metrics: { port: 0 }, metricsHost: "127.0.0.2" } });
    try {
      const metricsUrl = new URL(server.metricsUrl!);
      assert.equal(metricsUrl.hostname, "127.0.0.2");
      assert.equal((await fetch(metricsUrl)).status, 200);
      // Not on the main address, neither on the main port nor on the metrics port.
      assert.equal((await fetch(`${server.url}/metrics`)).status, 404);
      await assert.rejects(fetch(`http://127.0.0.1:${metricsUrl.port}/metrics`));
    } finally {
      await server.close();
    }
  });
});
