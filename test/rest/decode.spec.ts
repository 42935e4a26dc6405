import assert from "node:assert/strict";
import { RemoveFactorRequestSchema } from "../../gen/identity/v1/account_pb.js";
import { IntrospectRequestSchema, IntrospectResponseSchema } from "../../gen/identity/v1/introspection_pb.js";
import { OAuthError } from "../../src/oauth/errors.js";
import { toMessage } from "../../src/rest/decode.js";

const params = (entries: Record<string, string>) => new Map(Object.entries(entries));
const invalidRequest = (pattern: RegExp) => (err: unknown) =>
  err instanceof OAuthError && err.code === "invalid_request" && pattern.test(err.description);

describe("REST parameters to a request message", () => {
  it("takes string fields by proto name or JSON name, and ignores unknown parameters", () => {
    const message = toMessage(IntrospectRequestSchema, params({ token: "t", tokenTypeHint: "access_token", client_id: "c", extra: "x" }));
    assert.deepEqual(
      { token: message.token, tokenTypeHint: message.tokenTypeHint, clientId: message.clientId, clientSecret: message.clientSecret },
      { token: "t", tokenTypeHint: "access_token", clientId: "c", clientSecret: "" },
    );
  });

  it("refuses a field given under both its names", () => {
    assert.throws(() => toMessage(IntrospectRequestSchema, params({ client_id: "a", clientId: "a" })), invalidRequest(/client_id is repeated/));
  });

  // No REST request has such a field today; a proto that adds one must still get typed values or a clear error.
  it("converts other scalar types, and refuses a value of the wrong type", () => {
    const message = toMessage(IntrospectResponseSchema, params({ exp: "1700000000", sub: "s" }));
    assert.deepEqual({ exp: message.exp, sub: message.sub }, { exp: 1700000000n, sub: "s" });
    assert.throws(() => toMessage(IntrospectResponseSchema, params({ exp: "soon" })), invalidRequest(/wrong type/));
  });

  it("takes a bool as the text true or false (a form's, or JSON's true made text), and nothing else", () => {
    assert.equal(toMessage(RemoveFactorRequestSchema, params({ factor_id: "f", confirm: "true" })).confirm, true);
    assert.equal(toMessage(RemoveFactorRequestSchema, params({ factor_id: "f", confirm: "false" })).confirm, false);
    assert.throws(() => toMessage(RemoveFactorRequestSchema, params({ confirm: "yes" })), invalidRequest(/wrong type/));
  });
});
