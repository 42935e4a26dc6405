import assert from "node:assert/strict";
import { parseApplicationInput } from "../../src/accounts/applications.js";
import { InvalidInputError } from "../../src/accounts/validation.js";

/** The fields an InvalidInputError names, in order. */
function refusedFields(run: () => unknown): string[] {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof InvalidInputError, String(err));
    return err.problems.map((p) => p.field);
  }
  assert.fail("the input was taken");
}

describe("application input", () => {
  it("names every bad field of one input, in the order of the fields", () => {
    const fields = refusedFields(() =>
      parseApplicationInput({ name: "a", redirectUris: ["not a url"], grantTypes: ["urn:example:nothing"], expireInHours: 1.5, tokenFormat: "XML" }),
    );
    assert.deepEqual(fields, ["redirectUris", "grantTypes", "expireInHours", "tokenFormat"]);
  });

  it("takes a good input as given, and leaves absent fields absent", () => {
    const input = parseApplicationInput({ name: "a", redirectUris: ["https://app.example/cb"], grantTypes: ["password"] });
    assert.deepEqual(input.redirectUris, ["https://app.example/cb"]);
    assert.deepEqual(input.grantTypes, ["password"]);
    assert.equal(input.expireInHours, undefined);
  });

  it("refuses an unknown field by name, and a chosen secret that is too short", () => {
    assert.deepEqual(refusedFields(() => parseApplicationInput({ name: "a", colour: "blue" })), ["colour"]);
    assert.deepEqual(refusedFields(() => parseApplicationInput({ name: "a", clientSecret: "short" })), ["clientSecret"]);
  });

  it("refuses clear-text redirect URIs off the machine, and takes them on a loopback host", () => {
    assert.deepEqual(refusedFields(() => parseApplicationInput({ name: "a", redirectUris: ["http://app.example/cb"] })), ["redirectUris"]);
    assert.deepEqual(parseApplicationInput({ name: "a", redirectUris: ["http://127.0.0.1:9/cb"] }).redirectUris, ["http://127.0.0.1:9/cb"]);
  });
});
