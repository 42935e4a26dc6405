import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { withCrossOrigin, type CrossOriginOptions } from "../../src/http/cors.js";

const ORIGIN = "https://app.example.com";

/** A server whose only answer is 200 "served", behind withCrossOrigin on /api. */
async function serve(allows: CrossOriginOptions["allows"], errors: unknown[] = []) {
  const handler = withCrossOrigin({ paths: ["/api"], allows, onLookupError: (err) => errors.push(err) }, (req, res, url) =>
    res.end(`served ${req.method} ${url?.pathname}`),
  );
  // The handler takes the parsed target, as observeRequests gives it.
  const server = http.createServer((req, res) => handler(req, res, new URL(req.url ?? "/", "http://localhost")));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("http/cors.ts", () => {
  it("waits for a lookup that is not cached, and answers from it", async () => {
    const { base, close } = await serve(async (origin) => origin === ORIGIN);
    try {
      const preflight = await fetch(`${base}/api`, { method: "OPTIONS", headers: { origin: ORIGIN, "access-control-request-method": "POST" } });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get("access-control-allow-origin"), ORIGIN);
      const answer = await fetch(`${base}/api`, { headers: { origin: ORIGIN } });
      assert.equal(await answer.text(), "served GET /api");
      assert.equal(answer.headers.get("access-control-allow-origin"), ORIGIN);
    } finally {
      await close();
    }
  });

  it("treats a failed lookup as an unlisted origin, reports it, and still serves the request", async () => {
    const errors: unknown[] = [];
    const { base, close } = await serve(() => Promise.reject(new Error("database down")), errors);
    try {
      const answer = await fetch(`${base}/api`, { method: "POST", headers: { origin: ORIGIN } });
      assert.equal(await answer.text(), "served POST /api");
      assert.equal(answer.headers.get("access-control-allow-origin"), null);
      const preflight = await fetch(`${base}/api`, { method: "OPTIONS", headers: { origin: ORIGIN, "access-control-request-method": "POST" } });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get("access-control-allow-methods"), null);
      assert.equal(errors.length, 2);
    } finally {
      await close();
    }
  });

  it("asks nothing for other paths or requests without an Origin", async () => {
    let asked = 0;
    const { base, close } = await serve(() => (asked++, true));
    try {
      assert.equal(await (await fetch(`${base}/other`, { headers: { origin: ORIGIN } })).text(), "served GET /other");
      const plain = await fetch(`${base}/api`);
      assert.equal(await plain.text(), "served GET /api");
      assert.equal(plain.headers.get("vary"), "Origin");
      assert.equal(asked, 0);
    } finally {
      await close();
    }
  });
});
