import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";

const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS = "urn:ietf:params:oauth:token-type:access_token";
const ID = "urn:ietf:params:oauth:token-type:id_token";

/** The service a user's token reaches first; it calls `orders` on the user's behalf. */
const FRONT = { name: "front", clientId: "client-front", clientSecret: "secret-of-the-front-service", grantTypes: ["password", "token_exchange", "client_credentials"], exchangeAudiences: ["client-orders"] };
const ORDERS = { name: "orders", clientId: "client-orders", clientSecret: "secret-of-the-orders-service", grantTypes: ["client_credentials", "token_exchange"], exchangeAudiences: ["client-billing"], allowImpersonation: true };
const BILLING = { name: "billing", clientId: "client-billing", clientSecret: "secret-of-the-billing-service", grantTypes: ["client_credentials"] };

describe("token exchange (RFC 8693)", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP, FRONT, ORDERS, BILLING], users: [TEST_USER] } });
  });
  after(() => server.close());

  const tokenUrl = () => `${server.url}/api/login/oauth/access_token`;
  const as = (app: { clientId: string; clientSecret: string }, params: Record<string, string>): Promise<HttpResult> =>
    postForm(tokenUrl(), { grant_type: EXCHANGE, ...params }, { authorization: basicAuth(app.clientId, app.clientSecret) });
  const userToken = async (scope = "openid profile") =>
    (await postForm(tokenUrl(), { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope }, { authorization: basicAuth(FRONT.clientId, FRONT.clientSecret) })).body;
  const serviceToken = async (app: { clientId: string; clientSecret: string }) =>
    (await postForm(tokenUrl(), { grant_type: "client_credentials" }, { authorization: basicAuth(app.clientId, app.clientSecret) })).body.access_token as string;
  const introspect = async (token: string) =>
    (await postForm(`${server.url}/api/login/oauth/introspect`, { token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) })).body;

  it("delegates with openid-client's genericGrantRequest: aud the target, client_id the exchanger, act the actor, no refresh token, no longer than the subject", async () => {
    const subject = await userToken();
    const actor = await serviceToken(FRONT);
    const config = await oidc.discovery(new URL(server.issuer), FRONT.clientId, FRONT.clientSecret, undefined, { execute: [oidc.allowInsecureRequests] });
    assert.ok(config.serverMetadata().grant_types_supported?.includes(EXCHANGE));
    const tokens = await oidc.genericGrantRequest(config, EXCHANGE, {
      subject_token: subject.access_token, subject_token_type: ACCESS, actor_token: actor, actor_token_type: ACCESS, audience: ORDERS.clientId, scope: "openid",
    });
    assert.equal(tokens.issued_token_type, ACCESS);
    assert.equal(tokens.refresh_token, undefined);
    const claims = decodeJwt(tokens.access_token);
    const subjectClaims = decodeJwt(subject.access_token);
    assert.equal(claims.aud, ORDERS.clientId);
    assert.equal(claims.client_id, FRONT.clientId);
    assert.equal(claims.sub, subjectClaims.sub);
    assert.deepEqual(claims.act, { sub: FRONT.clientId, client_id: FRONT.clientId });
    assert.ok(claims.exp! <= subjectClaims.exp!);
    assert.equal(claims.scope, "openid");
    const seen = await introspect(tokens.access_token);
    assert.equal(seen.active, true);
    assert.deepEqual(seen.act, { sub: FRONT.clientId, client_id: FRONT.clientId });
  });

  it("nests act when the actor token was itself delegated, and impersonates where allowed", async () => {
    const subject = (await userToken()).access_token;
    const first = await as(FRONT, { subject_token: subject, subject_token_type: ACCESS, actor_token: await serviceToken(FRONT), audience: ORDERS.clientId });
    assert.equal(first.status, 200, first.text);
    // orders, holding the delegated token, calls billing: the delegated token acts.
    const second = await as(ORDERS, { subject_token: subject, subject_token_type: ACCESS, actor_token: first.body.access_token, audience: BILLING.clientId });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(decodeJwt(second.body.access_token).act, {
      sub: decodeJwt(subject).sub, client_id: FRONT.clientId, act: { sub: FRONT.clientId, client_id: FRONT.clientId },
    });
    const impersonated = await as(ORDERS, { subject_token: subject, subject_token_type: ACCESS, audience: BILLING.clientId });
    assert.equal(impersonated.status, 200, impersonated.text);
    assert.equal(decodeJwt(impersonated.body.access_token).act, undefined);
  });

  it("takes an ID token of ours as the subject, passing on openid only", async () => {
    const { id_token: idToken } = await userToken();
    const res = await as(FRONT, { subject_token: idToken, subject_token_type: ID, actor_token: await serviceToken(FRONT), audience: ORDERS.clientId });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.scope, "openid");
    const widened = await as(FRONT, { subject_token: idToken, subject_token_type: ID, actor_token: await serviceToken(FRONT), audience: ORDERS.clientId, scope: "openid profile" });
    assert.equal(widened.body.error, "invalid_scope");
  });

  it("refuses a widened scope, an audience not listed, impersonation not allowed, and a token type that does not match", async () => {
    const subject = (await userToken("openid")).access_token;
    const actor = await serviceToken(FRONT);
    const widened = await as(FRONT, { subject_token: subject, subject_token_type: ACCESS, actor_token: actor, audience: ORDERS.clientId, scope: "openid email" });
    assert.equal(widened.status, 400);
    assert.equal(widened.body.error, "invalid_scope");
    for (const audience of [BILLING.clientId, "client-nobody", ""]) {
      const res = await as(FRONT, { subject_token: subject, subject_token_type: ACCESS, actor_token: actor, ...(audience ? { audience } : {}) });
      assert.equal(res.body.error, "invalid_target", audience);
    }
    assert.equal((await as(FRONT, { subject_token: subject, subject_token_type: ACCESS, resource: "https://billing.example" })).body.error, "invalid_target");
    const impersonation = await as(FRONT, { subject_token: subject, subject_token_type: ACCESS, audience: ORDERS.clientId });
    assert.equal(impersonation.body.error, "unauthorized_client");
    assert.equal((await as(FRONT, { subject_token: subject, subject_token_type: ID, actor_token: actor, audience: ORDERS.clientId })).body.error, "invalid_grant");
  });

  it("refuses a revoked, an expired-looking or a foreign subject token with invalid_grant", async () => {
    const subject = (await userToken()).access_token;
    await postForm(`${server.url}/api/login/oauth/revoke`, { token: subject }, { authorization: basicAuth(FRONT.clientId, FRONT.clientSecret) });
    const actor = await serviceToken(FRONT);
    const revoked = await as(FRONT, { subject_token: subject, subject_token_type: ACCESS, actor_token: actor, audience: ORDERS.clientId });
    assert.equal(revoked.status, 400);
    assert.equal(revoked.body.error, "invalid_grant");
    const [header, , signature] = actor.split(".");
    const forged = `${header}.${Buffer.from(JSON.stringify({ sub: "someone", scope: "openid" })).toString("base64url")}.${signature}`;
    assert.equal((await as(FRONT, { subject_token: forged, subject_token_type: ACCESS, actor_token: actor, audience: ORDERS.clientId })).body.error, "invalid_grant");
    assert.equal((await as(FRONT, { subject_token: (await userToken()).access_token, subject_token_type: ACCESS, actor_token: "not-ours", audience: ORDERS.clientId })).body.error, "invalid_grant");
  });

  it("is a grant the application must enable, and is recorded in the audit trail", async () => {
    const res = await postForm(tokenUrl(), { grant_type: EXCHANGE, subject_token: "x", subject_token_type: ACCESS, audience: "y" }, { authorization: basicAuth(BILLING.clientId, BILLING.clientSecret) });
    assert.equal(res.body.error, "unauthorized_client");
    await server.store.auditWriter.flush();
    const events = await server.domain.auditEvents({ clientId: FRONT.clientId, event: "token_issued", pageSize: 100, pageToken: "" });
    assert.ok(events.events.some((e) => e.event === "token_issued" && (e.details as { grantType?: string }).grantType === EXCHANGE));
  });

  it("over gRPC (grpc-js): the exchange's fields in TokenRequest, issued_token_type and act in the answers", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const subject = (await userToken()).access_token;
      const metadata = { authorization: basicAuth(FRONT.clientId, FRONT.clientSecret) };
      const tokens = await grpc.call("TokenService", "Token", {
        grant_type: EXCHANGE, subject_token: subject, subject_token_type: ACCESS, actor_token: await serviceToken(FRONT), audience: ORDERS.clientId,
      }, metadata);
      assert.equal(tokens.issued_token_type, ACCESS);
      const seen = await grpc.call("IntrospectionService", "Introspect", { token: tokens.access_token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
      assert.deepEqual({ sub: seen.act.sub, client_id: seen.act.client_id }, { sub: FRONT.clientId, client_id: FRONT.clientId });
      const refused = await grpc.call("TokenService", "Token", { grant_type: EXCHANGE, subject_token: subject, subject_token_type: ACCESS, audience: BILLING.clientId }, metadata).then(() => undefined, (e: unknown) => e);
      assert.equal(oauthErrorOf(refused), "invalid_target");
    } finally {
      grpc.close();
    }
  });
});
