import { useState } from "preact/hooks";
import { FederationService, type Provider } from "../../../gen/identity/v1/federation_pb.js";
import type { PageProps } from "../app.js";
import { PROVIDER_TOKEN_AUTH_METHODS, PROVIDER_TYPES } from "../choices.js";
import { readShellSettings } from "../shell.js";
import { CheckboxField, Confirm, Dialog, FormActions, Notice, PageHeading, SelectField, Table, TextField, useLoad, useSubmit } from "../ui.js";

const TEXT_FIELDS = [
  ["displayName", "Display name"],
  ["clientId", "Client ID"],
] as const;
const URL_FIELDS = [
  ["authUrl", "Auth URL"],
  ["scope", "Scope"],
  ["tokenUrl", "Token URL"],
  ["userInfoUrl", "UserInfo URL"],
] as const;
const MORE_URL_FIELDS = [
  ["issuer", "Issuer"],
  ["emailsUrl", "Emails URL"],
] as const;
const MAPPING_FIELDS = [
  ["id", "ID path"],
  ["username", "Username path"],
  ["displayName", "Display name path"],
  ["email", "Email path"],
  ["avatarUrl", "Avatar URL path"],
  ["phone", "Phone path"],
] as const;
type MappingKey = (typeof MAPPING_FIELDS)[number][0];
type StringKey = (typeof TEXT_FIELDS | typeof URL_FIELDS | typeof MORE_URL_FIELDS)[number][0] | "name" | "type" | "favicon" | "tokenAuthMethod";

interface ProviderForm extends Record<StringKey, string> {
  /** Write-only: empty keeps the stored secret. */
  clientSecret: string;
  trustEmail: boolean;
  pkce: boolean;
  allowInsecureUrls: boolean;
  sharedCallback: boolean;
  mapping: Record<MappingKey, string>;
}

/** Every field the form shows, by the service's names: where a server field error goes. */
const FORM_FIELDS = [
  "name", "type", "clientSecret", "favicon", "tokenAuthMethod", "trustEmail", "pkce", "allowInsecureUrls", "sharedCallback",
  ...[...TEXT_FIELDS, ...URL_FIELDS, ...MORE_URL_FIELDS].map(([key]) => key),
  ...MAPPING_FIELDS.map(([key]) => `userMapping.${key}`),
];

function formOf(p?: Provider): ProviderForm {
  const mapping = Object.fromEntries(MAPPING_FIELDS.map(([key]) => [key, p?.userMapping?.[key] ?? ""])) as Record<MappingKey, string>;
  return {
    name: p?.name ?? "", type: p?.type ?? "Custom", displayName: p?.displayName ?? "", clientId: p?.clientId ?? "",
    clientSecret: "", authUrl: p?.authUrl ?? "", scope: p?.scope ?? "", tokenUrl: p?.tokenUrl ?? "",
    userInfoUrl: p?.userInfoUrl ?? "", favicon: p?.favicon ?? "", issuer: p?.issuer ?? "", emailsUrl: p?.emailsUrl ?? "",
    tokenAuthMethod: p?.tokenAuthMethod || "client_secret_basic", trustEmail: p?.trustEmail ?? false, pkce: p?.pkce ?? false,
    allowInsecureUrls: p?.allowInsecureUrls ?? false, sharedCallback: p?.sharedCallback ?? false, mapping,
  };
}

function inputOf(form: ProviderForm, before: ProviderForm | undefined) {
  // Empty text is left out (the service keeps or defaults it), unless it was
  // set before: then it is sent empty, and the service says whether it may be.
  const given = (key: StringKey) => {
    const value = form[key].trim();
    return value !== "" ? value : before?.[key] ? "" : undefined;
  };
  return {
    name: form.name.trim(), type: form.type, displayName: given("displayName"), clientId: given("clientId"),
    // Write-only: empty keeps the stored secret.
    clientSecret: form.clientSecret === "" ? undefined : form.clientSecret,
    authUrl: given("authUrl"), scope: given("scope"), tokenUrl: given("tokenUrl"), userInfoUrl: given("userInfoUrl"),
    favicon: given("favicon"), issuer: given("issuer"), emailsUrl: given("emailsUrl"),
    tokenAuthMethod: form.tokenAuthMethod, trustEmail: form.trustEmail, pkce: form.pkce, allowInsecureUrls: form.allowInsecureUrls,
    sharedCallback: form.sharedCallback, userMapping: form.mapping,
  };
}

/** Where the provider sends the browser back, as the service builds it (Provider.redirect_uri): for a form not saved yet. */
function redirectUriOf(form: ProviderForm): string {
  const { issuer } = readShellSettings();
  return form.sharedCallback ? `${issuer}/callback` : `${issuer}/callback/${form.name.trim() || "<name>"}`;
}

/** Whether the service holds a client secret for this provider; it never sends the secret itself. */
const secretIsSet = (p: Provider) => p.clientSecretSet;

/** Whether a favicon URL names an image the page may load: http(s), or a data: image; never a script scheme. */
function isImageUrl(src: string): boolean {
  try {
    const url = new URL(src);
    return url.protocol === "https:" || url.protocol === "http:" || (url.protocol === "data:" && /^image\//i.test(url.pathname));
  } catch {
    return false;
  }
}

/** The favicon as the login page shows it; a broken or unsafe one falls back to nothing. */
function Favicon(props: { src: string }) {
  const [broken, setBroken] = useState(false);
  if (!isImageUrl(props.src) || broken) return <span class="favicon none" aria-hidden="true" />;
  return <img class="favicon" src={props.src} alt="" width={20} height={20} referrerpolicy="no-referrer" onError={() => setBroken(true)} />;
}

export function ProvidersPage({ clients }: PageProps) {
  const federation = clients(FederationService);
  const list = useLoad(async () => (await federation.listProviders({})).providers);
  const [editing, setEditing] = useState<{ provider?: Provider }>();
  const [deleting, setDeleting] = useState<Provider>();
  return (
    <>
      <PageHeading title="Providers">
        <button type="button" class="primary" onClick={() => setEditing({})}>New provider</button>
      </PageHeading>
      <p class="lead">Upstream sign-in providers. An application shows the ones it lists on its login page. Register each one's redirect URI at the provider.</p>
      <Notice error={list.error} />
      {!list.data && !list.error && <p class="note">Loading…</p>}
      {list.data && list.data.length === 0 && <p>No providers yet.</p>}
      {list.data && list.data.length > 0 && (
        <Table columns={["Display name", "Name", "Type", "Client ID", "Client secret", "Redirect URI"]} actions>
          {list.data.map((p) => (
            <tr key={p.name}>
              <td><span class="with-icon"><Favicon src={p.favicon} />{p.displayName || p.name}</span></td>
              <td>{p.name}</td>
              <td>{p.type}</td>
              <td class="mono">{p.clientId}</td>
              <td>{secretIsSet(p) ? "Set" : "Not set"}</td>
              <td class="mono">{p.redirectUri}</td>
              <td class="row-actions">
                <button type="button" onClick={() => setEditing({ provider: p })} aria-label={`Edit ${p.name}`}>Edit</button>
                <button type="button" class="danger" onClick={() => setDeleting(p)} aria-label={`Delete ${p.name}`}>Delete</button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {editing && (
        <ProviderDialog
          provider={editing.provider}
          onClose={() => setEditing(undefined)}
          onSave={async (input) => {
            if (editing.provider) await federation.updateProvider({ provider: input });
            else await federation.createProvider({ provider: input });
            setEditing(undefined);
            list.reload();
          }}
        />
      )}
      {deleting && (
        <Confirm title="Delete provider" action="Delete" message={`Delete the provider ${deleting.name}? Applications that list it stop showing it.`}
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await federation.deleteProvider({ name: deleting.name });
            list.reload();
          }} />
      )}
    </>
  );
}

function ProviderDialog(props: { provider?: Provider; onClose: () => void; onSave: (input: ReturnType<typeof inputOf>) => Promise<void> }) {
  const [form, setForm] = useState(() => formOf(props.provider));
  const { errors, busy, submit } = useSubmit(FORM_FIELDS, () => props.onSave(inputOf(form, props.provider && formOf(props.provider))));
  const editing = props.provider !== undefined;
  const set = <K extends keyof ProviderForm>(key: K) => (value: ProviderForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  const setMapping = (key: MappingKey) => (value: string) => setForm((f) => ({ ...f, mapping: { ...f.mapping, [key]: value } }));
  const secretNote = !editing
    ? "Write-only: it is stored sealed and never shown again."
    : props.provider && secretIsSet(props.provider)
      ? "A secret is set. Leave this empty to keep it; type a new one to replace it."
      : "No secret is set.";
  const text = (key: StringKey, label: string, type: "text" | "url" = "text") => (
    <TextField id={`provider-${key}`} label={label} type={type} value={form[key]} onValue={set(key)} error={errors.fields[key]} />
  );
  return (
    <Dialog title={editing ? `Edit provider ${props.provider!.name}` : "New provider"} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <div class="grid">
          <TextField id="provider-name" label="Name" value={form.name} onValue={set("name")} error={errors.fields.name} required disabled={editing}
            note={editing ? "The name cannot change: applications refer to it." : "Up to 100 letters, digits and _ . -"} />
          {text("displayName", "Display name")}
          <SelectField id="provider-type" label="Type" value={form.type} options={PROVIDER_TYPES} onValue={set("type")} error={errors.fields.type}
            note={form.type === "Custom" ? "Give every URL below." : form.type === "OIDC" ? "The issuer's discovery fills in the URLs." : "Empty URLs take the type's own."} />
          {text("clientId", "Client ID")}
          <TextField id="provider-clientSecret" label="Client Secret" type="password" autoComplete="new-password" value={form.clientSecret}
            onValue={set("clientSecret")} error={errors.fields.clientSecret} note={secretNote} />
          {URL_FIELDS.map(([key, label]) => text(key, label, key === "scope" ? "text" : "url"))}
          <div class="favicon-field">
            <TextField id="provider-favicon" label="Favicon" type="url" value={form.favicon} onValue={set("favicon")} error={errors.fields.favicon} />
            <div class="preview" aria-live="polite">
              <span class="note">Preview</span>
              <span class="login-button"><Favicon key={form.favicon} src={form.favicon} /> Sign in with {form.displayName || form.name || "…"}</span>
            </div>
          </div>
          {MORE_URL_FIELDS.map(([key, label]) => text(key, label, "url"))}
          <SelectField id="provider-tokenAuthMethod" label="Token auth method" value={form.tokenAuthMethod} options={PROVIDER_TOKEN_AUTH_METHODS}
            onValue={set("tokenAuthMethod")} error={errors.fields.tokenAuthMethod} />
        </div>
        <CheckboxField id="provider-pkce" label="PKCE" checked={form.pkce} onValue={set("pkce")} error={errors.fields.pkce} note="Send a PKCE challenge upstream." />
        <CheckboxField id="provider-trustEmail" label="Trust email" checked={form.trustEmail} onValue={set("trustEmail")} error={errors.fields.trustEmail}
          note="Treat the provider's email as verified." />
        <CheckboxField id="provider-allowInsecureUrls" label="Allow insecure URLs" checked={form.allowInsecureUrls} onValue={set("allowInsecureUrls")}
          error={errors.fields.allowInsecureUrls} note="Allow http URLs off this machine (testing only)." />
        <CheckboxField id="provider-sharedCallback" label="Shared callback" checked={form.sharedCallback} onValue={set("sharedCallback")}
          error={errors.fields.sharedCallback} note="Return to the shared /callback. Unsafe when an application offers another provider: one can relay the other's sign-ins." />
        <p class="note" id="provider-redirectUri">Register this redirect URI at the provider: <code>{redirectUriOf(form)}</code></p>
        <fieldset class="group">
          <legend>User mapping</legend>
          <p class="note">JSON paths into the provider's user info; empty takes the type's default.</p>
          <div class="grid">
            {MAPPING_FIELDS.map(([key, label]) => (
              <TextField key={key} id={`provider-mapping-${key}`} label={label} value={form.mapping[key]} onValue={setMapping(key)} error={errors.fields[`userMapping.${key}`]} />
            ))}
          </div>
        </fieldset>
        <FormActions busy={busy} submit={editing ? "Save" : "Create"} onCancel={props.onClose} error={errors.form} />
      </form>
    </Dialog>
  );
}
