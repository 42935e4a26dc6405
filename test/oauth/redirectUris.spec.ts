import assert from "node:assert/strict";
import { applicationRedirectAllowed, redirectUriAllowed } from "../../src/oauth/redirectUris.js";
import { CONSOLE_CLIENT_ID } from "../../src/oauth/scopes.js";

describe("redirect_uri matching", () => {
  const registered = ["https://app.example.com/cb", "http://127.0.0.1:9999/callback", "http://[::1]/native"];

  it("matches registered URIs exactly, character for character", () => {
    assert.ok(redirectUriAllowed(registered, "https://app.example.com/cb"));
    for (const uri of [
      "https://app.example.com/cb/",
      "https://app.example.com/cb?x=1",
      "https://app.example.com/CB",
      "https://app.example.com:443/cb",
      "https://app.example.com.evil.com/cb",
      "http://app.example.com/cb",
      "https://app.example.com/cb#frag",
      "https://app.example.com:8443/cb",
    ]) {
      assert.equal(redirectUriAllowed(registered, uri), false, uri);
    }
  });

  it("lets an http loopback redirect use any port (RFC 8252 §7.3), and nothing else differ", () => {
    assert.ok(redirectUriAllowed(registered, "http://127.0.0.1:51234/callback"));
    assert.ok(redirectUriAllowed(registered, "http://127.0.0.1/callback"));
    assert.ok(redirectUriAllowed(registered, "http://[::1]:8080/native"));
    for (const uri of [
      "http://127.0.0.1:51234/other",
      "http://127.0.0.1:51234/callback?x=1",
      "http://localhost:51234/callback",
      "https://127.0.0.1:51234/callback",
      "http://user@127.0.0.1:51234/callback",
      "http://[::1]:8080/callback",
      "http://127.0.0.2:9999/callback",
      "not a url",
    ]) {
      assert.equal(redirectUriAllowed(registered, uri), false, uri);
    }
  });

  it("matches the console's redirect URI exactly, on a loopback issuer too (issue 41)", () => {
    for (const own of ["http://127.0.0.1:8000/admin/", "http://[::1]:8000/admin/", "https://id.example.com/admin/"]) {
      const console = { clientId: CONSOLE_CLIENT_ID, redirectUris: [own] };
      assert.ok(applicationRedirectAllowed(console, own), own);
      const otherPort = new URL(own);
      otherPort.port = "8001";
      const noPort = new URL(own);
      noPort.port = "";
      for (const uri of [otherPort.href, noPort.href].filter((u) => u !== own)) assert.equal(applicationRedirectAllowed(console, uri), false, uri);
      // The same URIs for any other client keep RFC 8252 §7.3's latitude.
      assert.equal(applicationRedirectAllowed({ clientId: "native", redirectUris: [own] }, otherPort.href), own.startsWith("http:"));
    }
  });
});
