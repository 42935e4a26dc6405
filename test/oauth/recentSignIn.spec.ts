import assert from "node:assert/strict";
import { OAuthError } from "../../src/oauth/errors.js";
import { RECENT_SIGN_IN_SECONDS, requireRecentSignIn } from "../../src/oauth/recentSignIn.js";

const NOW_MS = 1_800_000_000_000;
const nowSeconds = NOW_MS / 1000;
const refusal = (scheme: "Bearer" | "DPoP") => (err: unknown) => {
  assert.ok(err instanceof OAuthError);
  assert.deepEqual([err.code, err.status, err.answer?.maxAge], ["insufficient_user_authentication", 401, RECENT_SIGN_IN_SECONDS]);
  assert.equal(err.answer?.challenge, scheme === "DPoP" ? "DPoP" : undefined);
  assert.match(err.description, /max_age=300/);
  return true;
};

/** RFC 9470 §3: the account API's changes that strip a factor or a link take a recent sign-in only. */
describe("a recent sign-in (RFC 9470 step-up)", () => {
  it("takes a sign-in up to 300 seconds old, and refuses one a second older, in the token's scheme", () => {
    assert.equal(RECENT_SIGN_IN_SECONDS, 300);
    requireRecentSignIn(nowSeconds, NOW_MS, "Bearer");
    requireRecentSignIn(nowSeconds - 300, NOW_MS, "Bearer");
    assert.throws(() => requireRecentSignIn(nowSeconds - 301, NOW_MS, "Bearer"), refusal("Bearer"));
    assert.throws(() => requireRecentSignIn(nowSeconds - 301, NOW_MS, "DPoP"), refusal("DPoP"));
  });

  it("refuses a token that does not say when its user signed in", () => {
    assert.throws(() => requireRecentSignIn(undefined, NOW_MS, "Bearer"), refusal("Bearer"));
  });
});
