import assert from "node:assert/strict";
import { backchannelLogoutUriProblem, optionalBackchannelLogoutUri } from "../../src/accounts/backchannelLogoutUri.js";
import { InvalidInputError } from "../../src/accounts/validation.js";

describe("backchannelLogoutUri: where logout tokens may be POSTed", () => {
  it("takes https anywhere public, and http only on a loopback host", () => {
    for (const uri of ["https://rp.example/logout", "https://rp.example:8443/bc?tenant=a", "http://127.0.0.1:9999/bc", "http://localhost/bc", "http://[::1]:8080/bc", "https://localhost/bc"]) {
      assert.equal(backchannelLogoutUriProblem(optionalBackchannelLogoutUri(uri)!, false), undefined, uri);
    }
    assert.match(backchannelLogoutUriProblem("http://rp.example/logout", false)!, /https/);
    assert.match(backchannelLogoutUriProblem("http://10.0.0.5/logout", true)!, /https/, "clear text off this machine, whatever the leave");
  });

  it("refuses a private or link-local address without allowPrivateBackchannelLogoutUri, and takes it with", () => {
    for (const uri of ["https://10.1.2.3/bc", "https://192.168.0.10/bc", "https://169.254.169.254/latest", "https://[fd00::1]/bc", "https://[fe80::1]/bc", "https://100.64.0.1/bc"]) {
      assert.match(backchannelLogoutUriProblem(uri, false)!, /private or link-local.*allowPrivateBackchannelLogoutUri/, uri);
      assert.equal(backchannelLogoutUriProblem(uri, true), undefined, uri);
    }
  });

  it("refuses what is no absolute http(s) URL, or has a fragment (§2.2), naming the field; takes \"\" to clear it", () => {
    for (const bad of ["not a url", "/relative", "ftp://rp.example/bc", "https://rp.example/bc#frag", 42]) {
      assert.throws(() => optionalBackchannelLogoutUri(bad), (err: unknown) => err instanceof InvalidInputError && err.field === "backchannelLogoutUri", String(bad));
    }
    assert.equal(optionalBackchannelLogoutUri(""), "");
    assert.equal(optionalBackchannelLogoutUri(undefined), undefined);
  });
});
