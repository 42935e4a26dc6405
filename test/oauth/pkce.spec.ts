import assert from "node:assert/strict";
import { OAuthError } from "../../src/oauth/errors.js";
import { parseChallenge, verifyPkce } from "../../src/oauth/pkce.js";
import { pkcePair } from "../support/browserless.js";

const oauthError = (code: string) => (err: unknown) => err instanceof OAuthError && err.code === code;

describe("PKCE", () => {
  const { verifier, challenge } = pkcePair();

  it("accepts an S256 challenge and the verifier that produced it", () => {
    assert.equal(parseChallenge(challenge, "S256"), challenge);
    assert.equal(parseChallenge(undefined, undefined), undefined);
    verifyPkce(challenge, verifier);
  });

  it("refuses plain, a challenge without its method, a method without a challenge, and a non-S256 challenge", () => {
    assert.throws(() => parseChallenge(verifier, "plain"), oauthError("invalid_request"));
    assert.throws(() => parseChallenge(challenge, undefined), oauthError("invalid_request"));
    assert.throws(() => parseChallenge(undefined, "S256"), oauthError("invalid_request"));
    assert.throws(() => parseChallenge("short", "S256"), oauthError("invalid_request"));
  });

  it("refuses a wrong, missing or malformed verifier, and a verifier for a code without challenge", () => {
    assert.throws(() => verifyPkce(challenge, pkcePair().verifier), oauthError("invalid_grant"));
    assert.throws(() => verifyPkce(challenge, ""), oauthError("invalid_grant"));
    assert.throws(() => verifyPkce(challenge, "a b"), oauthError("invalid_grant"));
    assert.throws(() => verifyPkce(null, verifier), oauthError("invalid_grant"));
    verifyPkce(null, "");
  });
});
