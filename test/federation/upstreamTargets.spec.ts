import assert from "node:assert/strict";
import type { LookupAddress } from "node:dns";
import net, { type AddressInfo, type LookupFunction } from "node:net";
import { oidcType } from "../../src/federation/providerTypes/oidc.js";
import type { ProviderConfig } from "../../src/federation/providerTypes/providerType.js";
import { UpstreamClient, UpstreamError } from "../../src/federation/upstream.js";
import { discoveredUrlProblem, isPublicAddress, PRIVATE_TARGET_PROBLEM } from "../../src/federation/urlRule.js";
import { OIDC_CLIENT, startFakeOidc } from "../support/fakeOidc.js";

/** A lookup that answers `names` from the table (every address given), as a DNS server the provider controls would. */
function lookupFrom(names: Record<string, string[]>): LookupFunction {
  return (hostname, options, callback) => {
    const addresses: LookupAddress[] = (names[hostname] ?? []).map((address) => ({ address, family: net.isIP(address) }));
    if (addresses.length === 0) return callback(Object.assign(new Error(`no ${hostname}`), { code: "ENOTFOUND" }), "", 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  };
}

describe("outbound targets of URLs a provider's discovery names (issue #41 §3)", () => {
  let victim: net.Server;
  let port: number;
  let connections = 0;

  before(async () => {
    victim = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => victim.listen(0, "127.0.0.1", resolve));
    port = (victim.address() as AddressInfo).port;
  });
  after(() => victim.close());
  beforeEach(() => (connections = 0));

  it("tells public addresses from loopback, private, link-local and reserved ones, IPv4 inside IPv6 included", () => {
    const notPublic = [
      "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
      "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "fc00::1", "::ffff:10.0.0.1", "::ffff:7f00:1", "64:ff9b::a00:1",
      "2002:a00:1::1", "ff02::1", "not an address",
    ];
    const publicOnes = ["8.8.8.8", "93.184.216.34", "172.32.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808"];
    assert.deepEqual(notPublic.filter(isPublicAddress), []);
    assert.deepEqual(publicOnes.filter((a) => !isPublicAddress(a)), []);
  });

  it("holds discovered URLs to https and public hosts, except on the issuer's own origin or with allowInsecureUrls", () => {
    const owner = { issuer: "https://sso.example/realms/main", allowInsecureUrls: false };
    assert.equal(discoveredUrlProblem("https://sso.example/token", owner), undefined);
    assert.equal(discoveredUrlProblem("https://api.sso.example/token", owner), undefined, "another public host: checked when connecting");
    for (const target of ["https://10.0.0.1/token", "https://169.254.169.254/", "https://[::1]/", "https://localhost/", "https://app.localhost/", "http://127.0.0.1:8080/"]) {
      assert.equal(discoveredUrlProblem(target, owner), PRIVATE_TARGET_PROBLEM, target);
    }
    assert.match(discoveredUrlProblem("http://api.sso.example/token", owner)!, /must use https/);
    const local = { issuer: "http://127.0.0.1:8080", allowInsecureUrls: false };
    assert.equal(discoveredUrlProblem("http://127.0.0.1:8080/token", local), undefined, "the issuer's own origin, which the operator chose");
    assert.equal(discoveredUrlProblem("http://127.0.0.1:8081/token", local), PRIVATE_TARGET_PROBLEM, "another port is another target");
    assert.equal(discoveredUrlProblem("http://10.0.0.1/token", { ...owner, allowInsecureUrls: true }), undefined);
  });

  it("refuses, at connect time, a host name that resolves to this machine, or to a private address among public ones", async () => {
    const upstream = new UpstreamClient({
      timeoutMs: 5000,
      maxBodyBytes: 65536,
      lookup: lookupFrom({ "internal.test": ["127.0.0.1"], "mixed.test": ["8.8.8.8", "127.0.0.1"] }),
    });
    for (const host of ["internal.test", "mixed.test"]) {
      for (const scheme of ["http", "https"]) {
        const err = await upstream.requestJson("token", `${scheme}://${host}:${port}/token`, { method: "POST", body: "code=x", publicOnly: true }).catch((e: unknown) => e);
        assert.ok(err instanceof UpstreamError, String(err));
        assert.equal(err.reason, PRIVATE_TARGET_PROBLEM);
      }
    }
    assert.equal(connections, 0, "nothing reached the victim");
    // The same call without the check does reach it: the lookup really leads there.
    await assert.rejects(upstream.requestJson("token", `http://internal.test:${port}/token`, { method: "POST", body: "code=x" }), UpstreamError);
    assert.equal(connections, 1);
  });

  it("makes an OIDC sign-in call a discovered token endpoint only at public addresses, while the issuer's own stays usable", async () => {
    const fake = await startFakeOidc();
    try {
      const upstream = new UpstreamClient({ timeoutMs: 5000, maxBodyBytes: 65536, lookup: lookupFrom({ "internal.test": ["127.0.0.1"] }) });
      const config: ProviderConfig = {
        ...OIDC_CLIENT, name: "remote", authUrl: "", scope: "openid", tokenUrl: "", userInfoUrl: "", userMapping: { id: "sub" },
        tokenAuthMethod: "client_secret_basic", pkce: true, emailsUrl: "", issuer: fake.origin, allowInsecureUrls: false,
      };
      fake.discovery = { token_endpoint: `https://internal.test:${port}/token` };
      const prepared = await oidcType.prepare!(upstream, config);
      assert.equal(prepared.tokenUrlPublicOnly, true);
      const exchange = { clientSecret: OIDC_CLIENT.clientSecret, code: "c", redirectUri: "https://id.example/callback" };
      const err = await oidcType.signIn(upstream, prepared, exchange).catch((e: unknown) => e);
      assert.ok(err instanceof UpstreamError, String(err));
      assert.deepEqual([err.step, err.reason], ["token", PRIVATE_TARGET_PROBLEM]);
      assert.equal(connections, 0, "nothing reached the victim");

      // A token URL the operator set is the operator's: no check (nor on the issuer's origin, which the round trips of every other test use).
      const configured = await oidcType.prepare!(upstream, { ...config, tokenUrl: `http://internal.test:${port}/token` });
      assert.equal(configured.tokenUrlPublicOnly, false);
    } finally {
      await fake.close();
    }
  });
});
