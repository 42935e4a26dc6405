import { useState } from "preact/hooks";
import { FederationService } from "../../../gen/identity/v1/federation_pb.js";
import { SettingsAdminService } from "../../../gen/identity/v1/settings_pb.js";
import type { PageProps } from "../app.js";
import { CheckboxGroup, FormActions, Notice, PageHeading, useLoad, useSubmit } from "../ui.js";

/** The settings the form shows, by the service's names: where a field error goes. */
const FORM_FIELDS = ["consoleProviders"];

export function SettingsPage({ clients }: PageProps) {
  const settings = clients(SettingsAdminService);
  const federation = clients(FederationService);
  const loaded = useLoad(async () => {
    const [current, { providers }] = await Promise.all([settings.getSettings({}), federation.listProviders({})]);
    return { current, providers };
  });
  return (
    <>
      <PageHeading title="Settings" />
      <p class="lead">Stored in the database: a change counts at the next sign-in, on every instance, without a restart.</p>
      <Notice error={loaded.error} />
      {!loaded.data && !loaded.error && <p class="note">Loading…</p>}
      {loaded.data && (
        <ConsoleSignInForm
          stored={loaded.data.current.settings?.consoleProviders ?? []}
          effective={loaded.data.current.effective?.consoleProviders ?? []}
          overridden={loaded.data.current.overridden.includes("consoleProviders")}
          providers={loaded.data.providers.map((p) => ({ value: p.name, label: p.displayName || p.name }))}
          onSave={async (consoleProviders) => {
            await settings.updateSettings({ settings: { consoleProviders }, updateFields: ["consoleProviders"] });
            loaded.reload();
          }}
        />
      )}
    </>
  );
}

function ConsoleSignInForm(props: {
  stored: string[];
  effective: string[];
  overridden: boolean;
  providers: { value: string; label: string }[];
  onSave: (consoleProviders: string[]) => Promise<void>;
}) {
  const [chosen, setChosen] = useState(props.stored);
  const [saved, setSaved] = useState(false);
  const label = (name: string) => props.providers.find((p) => p.value === name)?.label ?? name;
  // A stored name whose provider was deleted since: shown, so that it can be taken off.
  const gone = props.stored.filter((name) => !props.providers.some((p) => p.value === name)).map((name) => ({ value: name, label: `${name} (no such provider)` }));
  const { errors, busy, submit } = useSubmit(FORM_FIELDS, async () => {
    setSaved(false);
    // In the order the list shows them: the order of the buttons on the sign-in page.
    const options = [...props.providers, ...gone].map((o) => o.value);
    await props.onSave(options.filter((name) => chosen.includes(name)));
    setSaved(true);
  });
  return (
    <section aria-labelledby="console-sign-in">
      <h2 id="console-sign-in">Console sign-in</h2>
      <p class="note">The login providers the console's sign-in page offers beside the password, so that an administrator without a password can sign in.</p>
      {props.overridden && (
        <p class="notice" id="console-providers-overridden">
          Overridden on this instance by <code>--console-providers</code>: its sign-in page offers {props.effective.map(label).join(", ") || "no provider"}.
          What you save here is stored, and counts on instances started without it.
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <CheckboxGroup id="settings-consoleProviders" legend="Providers on the console's sign-in page" options={[...props.providers, ...gone]}
          values={chosen} onValues={(values) => { setChosen(values); setSaved(false); }} error={errors.fields.consoleProviders} />
        <FormActions busy={busy} submit="Save" error={errors.form} />
        {saved && !busy && <p class="ok" role="status">Saved. The next sign-in offers {chosen.length ? chosen.map(label).join(", ") : "the password alone"}{props.overridden ? " on instances without the override" : ""}.</p>}
      </form>
    </section>
  );
}
