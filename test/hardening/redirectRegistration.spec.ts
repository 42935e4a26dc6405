import assert from "node:assert/strict";
import { cleartextRedirectProblem } from "../../src/oauth/redirectUris.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describe("registering redirect URIs (RFC 9700 §2.6: no authorization response in clear text)", () => {
  it("takes https anywhere, and http only on a loopback address", () => {
    for (const ok of ["https://app.example.com/cb", "http://127.0.0.1:9999/callback", "http://127.0.0.1/cb", "http://[::1]:8080/cb", "http://localhost:8080/cb"]) {
      assert.equal(cleartextRedirectProblem(ok), undefined, ok);
    }
    for (const bad of ["http://app.example.com/cb", "http://localhost.evil.example/cb", "http://127.0.0.2/cb", "http://10.0.0.1/cb"]) {
      assert.match(cleartextRedirectProblem(bad) ?? "", /must use https/, bad);
    }
  });

  it("refuses an http redirect URI on another host when an application is configured", async () => {
    await assert.rejects(
      startTestServer({ config: { applications: [{ ...TEST_APP, redirectUris: ["http://app.example.com/cb"] }], users: [TEST_USER] } }),
      /applications\[0\] \(app1\): redirectUris: "http:\/\/app\.example\.com\/cb" must use https/,
    );
  });
});
