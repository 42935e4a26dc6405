import assert from "node:assert/strict";
import {
  assertionAudiences, codeLifetimeSeconds, dpopAlgsFor, dpopRequiredBy, fapi2ApplicationProblems, fapi2AuthorizeProblem, jwtAlgsFor, refreshTokenRotates,
} from "../../src/oauth/fapi2.js";
import type { ApplicationRecord } from "../../src/shared/model.js";

type Saved = Pick<ApplicationRecord, "profile" | "tokenEndpointAuthMethod" | "signingAlg" | "grantTypes">;
const FAPI2: Saved = { profile: "fapi2", tokenEndpointAuthMethod: "private_key_jwt", signingAlg: "PS256", grantTypes: ["authorization_code", "refresh_token"] };

/** The FAPI 2.0 rules of oauth/fapi2.ts, each alone; fapi2Profile.spec.ts runs them through the server. */
describe("FAPI 2.0 profile rules", () => {
  it("allows a fapi2 application with private_key_jwt and PS256, ES256 or EdDSA, and holds no other profile to them", () => {
    for (const signingAlg of ["PS256", "ES256", "EdDSA"] as const) assert.deepEqual(fapi2ApplicationProblems({ ...FAPI2, signingAlg }), []);
    assert.deepEqual(fapi2ApplicationProblems({ tokenEndpointAuthMethod: "client_secret_basic", signingAlg: "RS256", grantTypes: ["password"] }), []);
  });

  it("names each field a fapi2 application has wrong", () => {
    const problems = fapi2ApplicationProblems({ profile: "fapi2", tokenEndpointAuthMethod: "client_secret_jwt", signingAlg: "RS256", grantTypes: ["authorization_code", "implicit"] });
    assert.deepEqual(problems.map((p) => p.field), ["tokenEndpointAuthMethod", "signingAlg", "grantTypes"]);
    for (const method of ["client_secret_basic", "client_secret_post", "none"] as const) {
      assert.deepEqual(fapi2ApplicationProblems({ ...FAPI2, tokenEndpointAuthMethod: method }).map((p) => p.field), ["tokenEndpointAuthMethod"]);
    }
    assert.match(fapi2ApplicationProblems({ ...FAPI2, grantTypes: ["password"] })[0]!.problem, /refuses the password grant/);
  });

  it("asks a fapi2 authorize request for PAR, then PKCE S256", () => {
    assert.match(fapi2AuthorizeProblem(FAPI2, { codeChallengeMethod: "S256" }, false)!.description, /pushed first/);
    assert.match(fapi2AuthorizeProblem(FAPI2, {}, true)!.description, /PKCE/);
    assert.equal(fapi2AuthorizeProblem(FAPI2, {}, true)!.code, "invalid_request");
    assert.equal(fapi2AuthorizeProblem(FAPI2, { codeChallengeMethod: "S256" }, true), undefined);
    assert.equal(fapi2AuthorizeProblem({}, {}, false), undefined);
  });

  it("requires DPoP for fapi2 or dpopBoundAccessTokens, caps fapi2 codes at 60 seconds, and drops RS256 from its JWTs", () => {
    assert.match(dpopRequiredBy(FAPI2)!, /FAPI 2\.0/);
    assert.match(dpopRequiredBy({ dpopBoundAccessTokens: true })!, /DPoP-bound/);
    assert.equal(dpopRequiredBy({}), undefined);
    assert.deepEqual([codeLifetimeSeconds(FAPI2, 300), codeLifetimeSeconds(FAPI2, 30), codeLifetimeSeconds({}, 300)], [60, 30, 300]);
    assert.deepEqual(jwtAlgsFor(FAPI2, ["RS256", "PS256", "ES256", "EdDSA", "Ed25519"]), ["PS256", "ES256", "EdDSA", "Ed25519"]);
    assert.deepEqual(jwtAlgsFor({}, ["RS256", "PS256"]), ["RS256", "PS256"]);
  });

  it("takes the issuer alone, as a string, in a fapi2 assertion's aud; keeps its refresh tokens; holds its DPoP proofs to §5.4", () => {
    const accepted = ["https://id.example", "https://id.example/api/oauth/par"];
    assert.deepEqual(assertionAudiences(FAPI2, "https://id.example", accepted), { audiences: ["https://id.example"], issuerStringOnly: true });
    assert.deepEqual(assertionAudiences({}, "https://id.example", accepted), { audiences: accepted, issuerStringOnly: false });
    assert.deepEqual([refreshTokenRotates(FAPI2), refreshTokenRotates({})], [false, true]);
    assert.deepEqual([...dpopAlgsFor(FAPI2)!].sort(), ["ES256", "Ed25519", "EdDSA", "PS256"]);
    assert.equal(dpopAlgsFor({}), undefined);
  });
});
