import assert from "node:assert/strict";
import { withPreset } from "../../src/federation/providerTypes/presets.js";
import { githubType } from "../../src/federation/providerTypes/github.js";
import { MappingError } from "../../src/federation/upstream.js";
import { insecureUrlProblem } from "../../src/federation/urlRule.js";
import { mappingPathProblem, mapProfile, valueAt } from "../../src/federation/userMapping.js";
import type { ProviderRecord } from "../../src/shared/model.js";

describe("user mapping", () => {
  it("reads names and array indexes joined by dots, and nothing else", () => {
    const body = { data: { user: { email: "a@b.example" } }, emails: [{ value: "first@x.example" }, { value: "second@x.example" }] };
    assert.equal(valueAt(body, "data.user.email"), "a@b.example");
    assert.equal(valueAt(body, "emails.1.value"), "second@x.example");
    assert.equal(valueAt(body, "emails.value"), undefined, "an array is indexed by number only");
    assert.equal(valueAt(body, "data.user.missing.deeper"), undefined);
    assert.equal(valueAt({}, "constructor"), undefined, "only the answer's own keys");
    assert.equal(valueAt({ a: 1 }, "__proto__"), undefined);
    assert.equal(mappingPathProblem("a..b"), "must be names or indexes joined by dots");
    assert.equal(mappingPathProblem(""), "must be a path of 1-200 characters");
    assert.equal(mappingPathProblem("emails.0.value"), undefined);
  });

  it("makes numbers strings, leaves null and other types empty, and reads phone", () => {
    const profile = mapProfile(
      { id: 583231, login: "octocat", name: null, email: { not: "a string" }, avatar_url: "https://a.example/o.png", tel: 5550100 },
      { id: "id", username: "login", displayName: "name", email: "email", avatarUrl: "avatar_url", phone: "tel" },
    );
    assert.deepEqual(profile, { id: "583231", idType: "sub", username: "octocat", displayName: "", email: "", avatarUrl: "https://a.example/o.png", phone: "5550100" });
  });

  it("by default reads the spec's fields: id from sub, else preferred_username (kept apart)", () => {
    const spec = { sub: "s-1", preferred_username: "carol", name: "Carol", email: "c@x.example", picture: "https://x.example/c.png", email_verified: false };
    assert.deepEqual(mapProfile(spec, {}), {
      id: "s-1", idType: "sub", username: "carol", displayName: "Carol", email: "c@x.example", avatarUrl: "https://x.example/c.png", phone: "", emailVerified: false,
    });
    const noSub = mapProfile({ preferred_username: "carol" }, {});
    assert.deepEqual([noSub.id, noSub.idType, noSub.email], ["carol", "preferred_username", ""]);
  });

  it("needs only the id: missing, null, empty or of another type is a MappingError naming field and path", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ login: "x" }, "is missing"],
      [{ id: null }, "is missing"],
      [{ id: "" }, "is missing"],
      [{ id: [1] }, "is neither a string nor a number"],
      [{ id: "x".repeat(256) }, "is longer than 255 characters"],
    ];
    for (const [body, reason] of cases) {
      assert.throws(() => mapProfile(body, { id: "id" }), (err: unknown) => err instanceof MappingError && err.field === "id" && err.path === "id" && err.reason === reason);
    }
    const onlyId = mapProfile({ id: 7 }, { id: "id" });
    assert.deepEqual([onlyId.id, onlyId.username, onlyId.email], ["7", undefined, ""]);
  });
});

describe("presets", () => {
  const provider = (over: Partial<ProviderRecord>) => ({ name: "gh", type: "GitHub", authUrl: "", tokenUrl: "", userInfoUrl: "", emailsUrl: "", scope: "", favicon: "", issuer: "", userMapping: {}, ...over }) as ProviderRecord;

  it("fill in only what the provider leaves empty: each URL field it sets, emailsUrl included, wins", () => {
    const plain = withPreset(provider({}), githubType.preset);
    assert.equal(plain.tokenUrl, "https://github.com/login/oauth/access_token");
    assert.equal(plain.emailsUrl, "https://api.github.com/user/emails");
    const enterprise = withPreset(
      provider({ authUrl: "https://ghe.example/login/oauth/authorize", tokenUrl: "https://ghe.example/t", userInfoUrl: "https://ghe.example/api/v3/user", emailsUrl: "https://ghe.example/api/v3/user/emails", userMapping: { username: "name" } }),
      githubType.preset,
    );
    assert.deepEqual(
      [enterprise.authUrl, enterprise.tokenUrl, enterprise.userInfoUrl, enterprise.emailsUrl, enterprise.scope],
      ["https://ghe.example/login/oauth/authorize", "https://ghe.example/t", "https://ghe.example/api/v3/user", "https://ghe.example/api/v3/user/emails", "read:user user:email"],
    );
    assert.deepEqual(enterprise.userMapping, { ...githubType.preset!.userMapping, username: "name" });
  });
});

describe("provider URLs", () => {
  it("must be https, except on loopback, unless allowInsecureUrls", () => {
    assert.equal(insecureUrlProblem("https://idp.example/x", false), undefined);
    for (const loopback of ["http://localhost:8080/x", "http://127.0.0.1/x", "http://127.9.9.9/x", "http://[::1]:9/x", "http://idp.localhost/x"]) {
      assert.equal(insecureUrlProblem(loopback, false), undefined, loopback);
    }
    for (const outside of ["http://idp.example/x", "http://10.0.0.1/x", "http://127.0.0.1.nip.io/x", "ftp://idp.example/x"]) {
      assert.match(insecureUrlProblem(outside, false) ?? "", /must use https/, outside);
    }
    assert.equal(insecureUrlProblem("http://idp.internal/x", true), undefined);
    assert.equal(insecureUrlProblem("not a url", false), "is not an absolute URL");
  });
});
