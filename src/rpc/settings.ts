import type { ServiceImpl } from "@connectrpc/connect";
import { SettingsAdminService } from "../../gen/identity/v1/settings_pb.js";
import { CONSOLE_PROVIDERS_FIELD } from "../accounts/consoleProviders.js";
import { FieldChecks } from "../accounts/validation.js";
import type { Domain } from "../domain/index.js";
import { echo } from "../oauth/errors.js";
import { everyMethod } from "./guards.js";

// Settings change who reaches the console: admins only, and never cached.
export const settingsAdminGuards = everyMethod(SettingsAdminService, ["noStore", "admin"]);

/** Every setting, by its JSON name: what an empty `update_fields` means. */
const SETTINGS = [CONSOLE_PROVIDERS_FIELD] as const;

export function settingsAdminService(domain: Domain): ServiceImpl<typeof SettingsAdminService> {
  const { consoleProviders } = domain;
  const answer = async () => {
    const stored = await consoleProviders.stored();
    const override = consoleProviders.override;
    return {
      settings: { consoleProviders: stored },
      effective: { consoleProviders: override ? [...override] : stored },
      overridden: override ? [CONSOLE_PROVIDERS_FIELD] : [],
    };
  };
  return {
    getSettings: answer,
    async updateSettings(req) {
      const fields = req.updateFields.length > 0 ? req.updateFields : SETTINGS;
      const checks = new FieldChecks();
      const unknown = fields.filter((f) => !(SETTINGS as readonly string[]).includes(f));
      if (unknown.length > 0) checks.refuse("updateFields", `${unknown.map((f) => JSON.stringify(echo(f))).join(", ")} ${unknown.length === 1 ? "is not a setting" : "are not settings"} (${SETTINGS.join(", ")})`);
      checks.done();
      if (fields.includes(CONSOLE_PROVIDERS_FIELD)) await consoleProviders.set(req.settings?.consoleProviders ?? []);
      return answer();
    },
  };
}
