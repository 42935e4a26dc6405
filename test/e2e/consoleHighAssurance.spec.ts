import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import type { Locator } from "playwright-core";
import { SHOTS, useConsoleSuite } from "../support/consoleSuite.js";

// The DOM is not in this project's TypeScript lib; these run in the page.
declare const document: any;

/**
 * The console's controls for the application fields of issue 45: PAR
 * (RFC 9126), DPoP (RFC 9449) and back-channel logout (OIDC Back-Channel
 * Logout 1.0). Chromium against the real server, as the other console specs.
 */
describe("admin console: PAR, DPoP and back-channel logout of an application", function () {
  this.timeout(120_000);
  const s = useConsoleSuite();

  const LABELS = {
    par: "PAR: its authorize requests must be pushed first (RFC 9126)",
    dpop: "DPoP: its token requests need a DPoP proof, binding its tokens to its key (RFC 9449)",
    sessionRequired: "Logout session required: its logout tokens must carry sid",
    allowPrivate: "Private logout URI: the back-channel logout URI may be a private or link-local address",
    uri: "Back-channel logout URI",
  };
  const box = (dialog: Locator, label: string) => dialog.getByLabel(label, { exact: true });
  const focusedId = () => s.page.evaluate(() => document.activeElement?.id as string);

  /** The application's dialog opened afresh from a reloaded page, as an administrator coming back would. */
  const reopen = async (name: string) => {
    await s.page.reload();
    await s.heading().filter({ hasText: "Applications" }).waitFor();
    await s.page.getByRole("button", { name: `Edit ${name}` }).click();
    const dialog = s.page.getByRole("dialog", { name: `Edit application ${name}` });
    await dialog.waitFor();
    return dialog;
  };

  const seen = async (dialog: Locator) => ({
    uri: await dialog.getByLabel(LABELS.uri, { exact: true }).inputValue(),
    par: await box(dialog, LABELS.par).isChecked(),
    dpop: await box(dialog, LABELS.dpop).isChecked(),
    sessionRequired: await box(dialog, LABELS.sessionRequired).isChecked(),
    allowPrivate: await box(dialog, LABELS.allowPrivate).isChecked(),
  });

  it("sets PAR, DPoP and back-channel logout, saves, and shows them after a reload; clears them the same way", async () => {
    const dialog = await s.newApplicationDialog("assured", "https://assured.example.com/cb");
    const uri = "https://assured.example.com/backchannel-logout";
    await dialog.getByLabel(LABELS.uri, { exact: true }).fill(uri);
    // By keyboard: Tab from the URI reaches the boxes, Space ticks them.
    for (const id of ["app-requirePushedAuthorizationRequests", "app-dpopBoundAccessTokens", "app-backchannelLogoutSessionRequired"]) {
      for (let i = 0; i < 20 && (await focusedId()) !== id; i++) await s.page.keyboard.press("Tab");
      assert.equal(await focusedId(), id, `Tab reaches ${id}`);
      await s.page.keyboard.press("Space");
    }
    await dialog.getByRole("button", { name: "Create" }).click();
    await s.dismissShownSecret("assured");
    const saved = await s.server.domain.applicationAdmin.get("assured");
    assert.deepEqual(
      [saved.requirePushedAuthorizationRequests, saved.dpopBoundAccessTokens, saved.backchannelLogoutUri, saved.backchannelLogoutSessionRequired, saved.allowPrivateBackchannelLogoutUri],
      [true, true, uri, true, false],
    );

    let edit = await reopen("assured");
    assert.deepEqual(await seen(edit), { uri, par: true, dpop: true, sessionRequired: true, allowPrivate: false });
    await edit.getByLabel(LABELS.uri, { exact: true }).fill("");
    for (const label of [LABELS.par, LABELS.dpop, LABELS.sessionRequired]) await box(edit, label).uncheck();
    await edit.getByRole("button", { name: "Save" }).click();
    await edit.waitFor({ state: "detached" });

    edit = await reopen("assured");
    assert.deepEqual(await seen(edit), { uri: "", par: false, dpop: false, sessionRequired: false, allowPrivate: false });
    const cleared = await s.server.domain.applicationAdmin.get("assured");
    assert.deepEqual([cleared.requirePushedAuthorizationRequests, cleared.dpopBoundAccessTokens ?? false, cleared.backchannelLogoutUri], [false, false, ""]);
  });

  it("shows the service's error beside a private back-channel logout URI, at 375 px too, and saves it with the allow box", async () => {
    await s.page.setViewportSize({ width: 375, height: 740 });
    const dialog = await s.newApplicationDialog("intranet", "https://intranet.example.com/cb");
    const field = dialog.getByLabel(LABELS.uri, { exact: true });
    await field.fill("https://10.0.0.7/logout");
    await dialog.getByRole("button", { name: "Create" }).click();
    const error = dialog.locator("#app-backchannelLogoutUri-error");
    await error.waitFor();
    assert.match(await error.innerText(), /private or link-local address/);
    assert.equal(await field.getAttribute("aria-invalid"), "true");
    assert.match((await field.getAttribute("aria-describedby")) ?? "", /app-backchannelLogoutUri-error/);
    assert.equal(await dialog.getByRole("alert").count(), 0, "the error is beside its field, not above the form");
    assert.equal(await s.server.store.applications.findByName("intranet"), undefined);
    // At phone width the dialog, its error shown, still fits and nothing scrolls sideways.
    const frame = (await dialog.boundingBox())!;
    assert.ok(frame.x >= 0 && frame.x + frame.width <= 375, `the dialog fits: ${JSON.stringify(frame)}`);
    assert.ok((await s.page.evaluate(() => document.scrollingElement.scrollWidth as number)) <= 375);
    const errorBox = (await error.boundingBox())!;
    assert.ok(errorBox.x + errorBox.width <= 375, "the error wraps inside the screen");
    mkdirSync(SHOTS, { recursive: true });
    await error.scrollIntoViewIfNeeded();
    await s.page.screenshot({ path: `${SHOTS}/phone-application-logout-error.png` });

    await box(dialog, LABELS.allowPrivate).check();
    await dialog.getByRole("button", { name: "Create" }).click();
    await s.dismissShownSecret("intranet");
    const saved = await s.server.domain.applicationAdmin.get("intranet");
    assert.deepEqual([saved.backchannelLogoutUri, saved.allowPrivateBackchannelLogoutUri], ["https://10.0.0.7/logout", true]);
    const edit = await reopen("intranet");
    assert.deepEqual(await seen(edit), { uri: "https://10.0.0.7/logout", par: false, dpop: false, sessionRequired: false, allowPrivate: true });
  });
});
