import assert from "node:assert/strict";
import { GRANTS } from "../../src/oauth/grants/index.js";
import { grantEnabled } from "../../src/oauth/tokenEndpoint.js";

describe("grants declare their own facts", () => {
  it("authorization_code and refresh_token are on for every application; the others only where listed", () => {
    assert.deepEqual([...GRANTS.values()].filter((g) => g.alwaysEnabled).map((g) => g.grantType).sort(), ["authorization_code", "refresh_token"]);
    for (const grantType of [...GRANTS.keys(), "implicit"]) {
      const always = grantType === "authorization_code" || grantType === "refresh_token";
      assert.equal(grantEnabled([], grantType), always, grantType);
      assert.equal(grantEnabled([grantType], grantType), true, grantType);
    }
  });
});
