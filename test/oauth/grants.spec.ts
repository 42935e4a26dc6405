import assert from "node:assert/strict";
import { GRANT_TABLE, GRANT_TYPES, GRANTS, grantEnabled, SECRET_GRANT_TYPES } from "../../src/oauth/grants/index.js";
import { discoveryDocument } from "../../src/oauth/discovery.js";
import { APPLICATION_CHOICES, parseApplicationInput } from "../../src/accounts/applications.js";
import { applicationChoicesService } from "../../src/rpc/choices.js";
import type { GrantFacts } from "../../src/oauth/grants/types.js";

describe("grants declare their own facts", () => {
  it("authorization_code, refresh_token and jwt-bearer (its trustedIssuers entry decides) are on for every application; the others only where listed", () => {
    const ALWAYS = ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"];
    assert.deepEqual([...GRANTS.values()].filter((g) => g.alwaysEnabled).map((g) => g.grantType).sort(), ALWAYS);
    for (const grantType of [...GRANTS.keys(), "implicit"]) {
      const always = ALWAYS.includes(grantType);
      assert.equal(grantEnabled([], grantType), always, grantType);
      assert.equal(grantEnabled([grantType], grantType), true, grantType);
    }
  });
});

describe("the grant table drives every list of grant types", () => {
  it("lists each token-endpoint grant, and implicit, once", () => {
    assert.deepEqual([...GRANT_TYPES].sort(), [...GRANTS.keys(), "implicit"].sort());
    assert.equal(new Set(GRANT_TYPES).size, GRANT_TYPES.length);
  });

  it("discovery advertises exactly the table's grant types", () => {
    assert.deepEqual(discoveryDocument("https://id.example").grantTypesSupported, [...GRANT_TYPES]);
  });

  it("application input takes each of the table's grant types, and nothing else", () => {
    for (const grantType of GRANT_TYPES) assert.deepEqual(parseApplicationInput({ name: "a", grantTypes: [grantType] }).grantTypes, [grantType]);
    assert.throws(() => parseApplicationInput({ name: "a", grantTypes: ["urn:example:unknown"] }), /grantTypes.*is not one of/);
  });

  it("the console's choices (ApplicationChoicesService) are the table's grants, each with its always-on and needs-secret facts", async () => {
    const answer = await applicationChoicesService().getApplicationChoices({} as never, {} as never);
    assert.deepEqual(
      answer.grantTypes?.map((g) => [g.grantType, g.shortName, g.alwaysOn, g.needsSecret]),
      GRANT_TABLE.map((g) => [g.grantType, g.shortName ?? "", g.alwaysEnabled, g.needsSecret]),
    );
    assert.deepEqual(APPLICATION_CHOICES.grantTypes.filter((g) => g.alwaysOn).map((g) => g.grantType), GRANT_TABLE.filter((g) => g.alwaysEnabled).map((g) => g.grantType));
  });

  it("derives the grants a public client cannot use from each grant's needsSecret", () => {
    assert.deepEqual([...SECRET_GRANT_TYPES].sort(), ["client_credentials", "password", "urn:ietf:params:oauth:grant-type:token-exchange"]);
    const flipped: GrantFacts[] = GRANT_TABLE.map((g) => ({ ...g, needsSecret: !g.needsSecret }));
    assert.notDeepEqual(flipped.filter((g) => g.needsSecret).map((g) => g.grantType), [...SECRET_GRANT_TYPES]);
  });
});
