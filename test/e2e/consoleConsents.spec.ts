import assert from "node:assert/strict";
import { exportJWK, generateKeyPair } from "jose";
import { GRANT_TABLE } from "../../src/oauth/grants/index.js";
import { signIn } from "../support/browserless.js";
import { allowAndRedeem, refreshes, registerClient } from "../support/consents.js";
import { enrolTotp } from "../support/factors.js";
import { TEST_USER } from "../support/server.js";
import { ROOT, useConsoleSuite } from "../support/consoleSuite.js";

/**
 * The console's pages for issues 42-46: grant choices from the service's
 * grant table, the #44 application fields, registered clients, resources,
 * and a user's consents and second factors. Chromium against the real
 * server, as the other console specs.
 */
describe("admin console: choices, registered clients, resources, a user's consents and factors", function () {
  this.timeout(120_000);
  const s = useConsoleSuite({ overrides: { clientRegistration: "open" } });
  const CHOICES_RPC = "**/identity.v1.ApplicationChoicesService/GetApplicationChoices";

  const grantBoxes = async () => {
    const group = s.page.getByRole("group", { name: "Grant types" });
    const boxes = await group.getByRole("checkbox").all();
    return Promise.all(boxes.map(async (box) => ({ value: await box.getAttribute("value"), checked: await box.isChecked(), disabled: await box.isDisabled() })));
  };

  it("offers the grant table's grants, always-on ones ticked and fixed, as ApplicationChoicesService answers", async () => {
    await s.newApplicationDialog("choices", "https://app.example.com/cb");
    assert.deepEqual(await grantBoxes(), GRANT_TABLE.map((g) => ({ value: g.grantType, checked: g.alwaysEnabled, disabled: g.alwaysEnabled })));
  });

  it("has no list of its own: a grant the service adds to its answer is offered, one it marks always on is fixed", async () => {
    await s.page.route(CHOICES_RPC, async (route) => {
      const answer = await (await route.fetch()).json();
      answer.grantTypes.push({ grantType: "urn:example:grant", alwaysOn: true });
      await route.fulfill({ json: answer });
    });
    await s.newApplicationDialog("choices", "https://app.example.com/cb");
    assert.deepEqual((await grantBoxes()).at(-1), { value: "urn:example:grant", checked: true, disabled: true });
  });

  it("saves the #44 fields and consent: private_key_jwt with a JWK Set, exchange audiences, impersonation", async () => {
    const { publicKey } = await generateKeyPair("ES256");
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1" }] });
    const dialog = await s.newApplicationDialog("keyed", "https://keyed.example.com/cb");
    await dialog.getByLabel("Client authentication").selectOption("private_key_jwt");
    await dialog.getByLabel("JWKS", { exact: true }).fill(jwks);
    await dialog.getByLabel("Exchange audiences").fill("client-1\nhttps://api.example.com/");
    await dialog.getByLabel(/^Impersonation/).check();
    await dialog.getByLabel(/^Consent/).check();
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    const app = await s.server.domain.applicationAdmin.get("keyed");
    assert.equal(app.tokenEndpointAuthMethod, "private_key_jwt");
    assert.equal(JSON.parse(app.jwks).keys[0].kid, "k1");
    assert.deepEqual(app.exchangeAudiences, ["client-1", "https://api.example.com/"]);
    assert.deepEqual([app.allowImpersonation, app.consentRequired], [true, true]);
    assert.equal(await s.inputsHolding(jwks), 0, "the dialog is gone with what it held");
  });

  it("marks a registered client registered, and deletes it", async () => {
    const agent = await registerClient(s.server, "Console agent");
    await s.signInToConsole(ROOT);
    await s.openPage("Applications");
    const row = s.page.getByRole("row").filter({ hasText: agent.client_id });
    assert.match(await row.innerText(), /registered/);
    await row.getByRole("button", { name: /^Delete / }).click();
    const confirm = s.page.getByRole("dialog", { name: "Delete application" });
    assert.match(await confirm.innerText(), /registered client/);
    await confirm.getByRole("button", { name: "Delete" }).click();
    await row.waitFor({ state: "detached" });
    assert.equal(await s.server.store.applications.findByClientId(agent.client_id, true), undefined);
  });

  it("creates, edits and deletes a resource with its scopes and their descriptions", async () => {
    await s.signInToConsole(ROOT);
    await s.openPage("Resources");
    await s.page.getByRole("button", { name: "New resource" }).click();
    let dialog = s.page.getByRole("dialog", { name: "New resource" });
    await dialog.getByLabel("URI").fill("https://mcp.example.com/");
    await dialog.getByLabel("Name").fill("MCP tools");
    await dialog.getByLabel("Scopes").fill("mcp:tools Use your tools\nmcp:read");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    const row = s.page.getByRole("row").filter({ hasText: "https://mcp.example.com/" });
    assert.match(await row.innerText(), /mcp:tools: Use your tools[\s\S]*mcp:read/);
    await row.getByRole("button", { name: "Edit MCP tools" }).click();
    dialog = s.page.getByRole("dialog", { name: "Edit resource MCP tools" });
    await dialog.getByLabel("Name").fill("Tools");
    await dialog.getByRole("button", { name: "Save" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual((await s.server.domain.resourceAdmin.get("https://mcp.example.com/")).scopes, [
      { name: "mcp:tools", description: "Use your tools" },
      { name: "mcp:read", description: "" },
    ]);
    await row.getByRole("button", { name: "Delete Tools" }).click();
    await s.page.getByRole("dialog", { name: "Delete resource" }).getByRole("button", { name: "Delete" }).click();
    await row.waitFor({ state: "detached" });
  });

  it("shows a user's consents and second factors, and revokes one and removes the other", async () => {
    const agent = await registerClient(s.server, "Agent of Alice");
    const { jar } = await signIn(s.server, { redirect_uri: s.upstream.url });
    const refreshToken = await allowAndRedeem(s.server, agent, jar);
    await enrolTotp(s.server, TEST_USER.name);
    await s.signInToConsole(ROOT);
    await s.openPage("Users");
    await s.page.getByRole("link", { name: `Consents and factors of ${TEST_USER.name}` }).click();
    await s.page.getByRole("heading", { level: 1, name: `User ${TEST_USER.name}` }).waitFor();
    assert.equal(await s.nav().getByRole("link", { name: "Users" }).getAttribute("aria-current"), "page");

    const consent = s.page.getByRole("row").filter({ hasText: agent.client_id });
    assert.match(await consent.innerText(), /Agent of Alice[\s\S]*registered[\s\S]*openid email offline_access/);
    await consent.getByRole("button", { name: "Revoke consent to Agent of Alice" }).click();
    await s.page.getByRole("dialog", { name: "Revoke consent" }).getByRole("button", { name: "Revoke" }).click();
    await s.page.getByRole("status").filter({ hasText: "1 refresh token ended" }).waitFor();
    await consent.waitFor({ state: "detached" });
    assert.equal(await refreshes(s.server, agent, refreshToken), false);

    const factor = s.page.getByRole("region", { name: `Second factors of ${TEST_USER.name}` });
    assert.match(await factor.innerText(), /One-time codes[\s\S]*Recovery codes left: 10/);
    await factor.getByRole("button", { name: /^Remove / }).click();
    await s.page.getByRole("dialog", { name: "Remove second factor" }).getByRole("button", { name: "Remove" }).click();
    await factor.getByText("No second factors.").waitFor();
    const user = (await s.server.store.users.findByName(TEST_USER.name))!;
    assert.deepEqual(await s.server.domain.secondFactors.list(user.id), []);
  });
});
