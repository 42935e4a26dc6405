import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { PushAuthorizationRequestRequestSchema } from "../../gen/identity/v1/authorize_pb.js";
import { authorizeParameters } from "../../src/rpc/authorize.js";

describe("PushedAuthorizationService: the message as authorize parameters", () => {
  it("keeps every non-empty parameter field under its OAuth name, joins a repeated one, and leaves the credentials out", () => {
    const req = create(PushAuthorizationRequestRequestSchema, {
      clientId: "c", clientSecret: "secret", clientAssertionType: "t", clientAssertion: "a",
      responseType: "code", redirectUri: "https://app.example/cb", maxAge: "60", resource: ["https://a.example/", "https://b.example/"], state: "",
    });
    assert.deepEqual(Object.fromEntries(authorizeParameters(req)), {
      client_id: "c", response_type: "code", redirect_uri: "https://app.example/cb", max_age: "60", resource: "https://a.example/ https://b.example/",
    });
  });
});
