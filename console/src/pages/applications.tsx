import { useState } from "preact/hooks";
import { ApplicationAdminService, type Application } from "../../../gen/identity/v1/admin_pb.js";
import { ApplicationChoicesService, type GetApplicationChoicesResponse } from "../../../gen/identity/v1/choices_pb.js";
import { FederationService } from "../../../gen/identity/v1/federation_pb.js";
import type { PageProps } from "../app.js";
import { CheckboxField, CheckboxGroup, Confirm, Dialog, FormActions, Notice, PageHeading, SelectField, ShownOnce, Table, TextField, useLoad, useSubmit } from "../ui.js";

interface ApplicationForm {
  name: string;
  clientId: string;
  redirectUris: string;
  grantTypes: string[];
  expireInHours: string;
  refreshExpireInHours: string;
  providers: string[];
  allowedOrigins: string;
  tokenFormat: string;
  signingAlg: string;
  accessTokenStrategy: string;
  publicClient: boolean;
  signup: boolean;
  tokenEndpointAuthMethod: string;
  jwks: string;
  jwksUri: string;
  exchangeAudiences: string;
  allowImpersonation: boolean;
  consentRequired: boolean;
  requirePushedAuthorizationRequests: boolean;
  dpopBoundAccessTokens: boolean;
  backchannelLogoutUri: string;
  backchannelLogoutSessionRequired: boolean;
  allowPrivateBackchannelLogoutUri: boolean;
  /** "" or `fapi2` (the FAPI 2.0 Security Profile). */
  profile: string;
}

/** The values each choice field accepts, as the service tells them (ApplicationChoicesService): the console keeps no copy. */
type Choices = GetApplicationChoicesResponse;

const FORM_FIELDS: readonly (keyof ApplicationForm)[] = [
  "name", "clientId", "redirectUris", "grantTypes", "expireInHours", "refreshExpireInHours", "providers", "allowedOrigins", "tokenFormat",
  "signingAlg", "accessTokenStrategy", "publicClient", "signup", "tokenEndpointAuthMethod", "jwks", "jwksUri", "exchangeAudiences",
  "allowImpersonation", "consentRequired", "requirePushedAuthorizationRequests", "dpopBoundAccessTokens", "backchannelLogoutUri",
  "backchannelLogoutSessionRequired", "allowPrivateBackchannelLogoutUri", "profile",
];

/** A new application's form starts at each list's first value, the service's default. */
function formOf(choices: Choices, a?: Application): ApplicationForm {
  return {
    name: a?.name ?? "", clientId: a?.clientId ?? "", redirectUris: a?.redirectUris.join("\n") ?? "",
    // The always-on grants show ticked whatever the list holds (CheckboxGroup); a new application lists none of its own.
    grantTypes: a?.grantTypes ?? [], expireInHours: String(a?.expireInHours ?? 1),
    refreshExpireInHours: String(a?.refreshExpireInHours ?? 0), providers: a?.providers ?? [], allowedOrigins: a?.allowedOrigins.join("\n") ?? "",
    tokenFormat: a?.tokenFormat || choices.tokenFormats[0]!, signingAlg: a?.signingAlg || choices.signingAlgs[0]!,
    accessTokenStrategy: a?.accessTokenStrategy || choices.accessTokenStrategies[0]!,
    publicClient: a?.publicClient ?? false,
    signup: a?.signup ?? false,
    tokenEndpointAuthMethod: a?.tokenEndpointAuthMethod || choices.tokenEndpointAuthMethods[0]!,
    jwks: a?.jwks ?? "", jwksUri: a?.jwksUri ?? "", exchangeAudiences: a?.exchangeAudiences.join("\n") ?? "",
    allowImpersonation: a?.allowImpersonation ?? false, consentRequired: a?.consentRequired ?? false, profile: a?.profile ?? "",
    requirePushedAuthorizationRequests: a?.requirePushedAuthorizationRequests ?? false, dpopBoundAccessTokens: a?.dpopBoundAccessTokens ?? false,
    backchannelLogoutUri: a?.backchannelLogoutUri ?? "", backchannelLogoutSessionRequired: a?.backchannelLogoutSessionRequired ?? false,
    allowPrivateBackchannelLogoutUri: a?.allowPrivateBackchannelLogoutUri ?? false,
  };
}

const lines = (text: string) => text.split(/\s*\n\s*/).map((l) => l.trim()).filter(Boolean);
/** A whole number of hours; anything else as -1, which the service refuses, naming the field with the others. */
const hours = (text: string) => (/^\s*\d+\s*$/.test(text) ? Number(text) : -1);

function inputOf(form: ApplicationForm, editing: boolean) {
  const keyed = !form.publicClient && form.tokenEndpointAuthMethod === "private_key_jwt";
  return {
    name: form.name.trim(),
    clientId: form.clientId.trim() || undefined,
    redirectUris: lines(form.redirectUris),
    grantTypes: form.grantTypes,
    expireInHours: hours(form.expireInHours),
    refreshExpireInHours: hours(form.refreshExpireInHours),
    providers: form.providers,
    allowedOrigins: lines(form.allowedOrigins),
    tokenFormat: form.tokenFormat,
    signingAlg: form.signingAlg,
    accessTokenStrategy: form.accessTokenStrategy,
    // The auth method `none` is the public client: the box says which, the method how a confidential one proves itself.
    publicClient: form.publicClient,
    tokenEndpointAuthMethod: form.publicClient ? "none" : form.tokenEndpointAuthMethod === "none" ? undefined : form.tokenEndpointAuthMethod,
    // Keys belong to private_key_jwt alone: what the hidden fields hold is cleared with any other method.
    jwks: keyed ? form.jwks.trim() : "",
    jwksUri: keyed ? form.jwksUri.trim() : "",
    exchangeAudiences: lines(form.exchangeAudiences),
    allowImpersonation: form.allowImpersonation,
    consentRequired: form.consentRequired,
    signup: form.signup,
    requirePushedAuthorizationRequests: form.requirePushedAuthorizationRequests,
    dpopBoundAccessTokens: form.dpopBoundAccessTokens,
    // An emptied field is meant empty: "" clears the URI.
    backchannelLogoutUri: form.backchannelLogoutUri.trim(),
    backchannelLogoutSessionRequired: form.backchannelLogoutSessionRequired,
    allowPrivateBackchannelLogoutUri: form.allowPrivateBackchannelLogoutUri,
    profile: form.profile,
    // The form shows every list: an emptied one is meant empty.
    replaceLists: editing,
  };
}

export function ApplicationsPage({ clients }: PageProps) {
  const applications = clients(ApplicationAdminService);
  const federation = clients(FederationService);
  const list = useLoad(async () => (await applications.listApplications({})).applications);
  const providers = useLoad(async () => (await federation.listProviders({})).providers);
  const choices = useLoad(() => clients(ApplicationChoicesService).getApplicationChoices({}));
  const [editing, setEditing] = useState<{ application?: Application }>();
  const [deleting, setDeleting] = useState<Application>();
  const [rotating, setRotating] = useState<Application>();
  const [secret, setSecret] = useState<{ name: string; value: string }>();
  const providerName = (name: string) => providers.data?.find((p) => p.name === name)?.displayName || name;
  return (
    <>
      <PageHeading title="Applications">
        <button type="button" class="primary" disabled={!choices.data} onClick={() => setEditing({})}>New application</button>
      </PageHeading>
      <p class="lead">OAuth clients of this service.</p>
      <Notice error={list.error ?? choices.error} />
      {!list.data && !list.error && <p class="note">Loading…</p>}
      {list.data && list.data.length === 0 && <p>No applications yet.</p>}
      {list.data && list.data.length > 0 && (
        <Table columns={["Name", "Client ID", "Client type", "Redirect URIs", "Grant types", "Providers"]} actions>
          {list.data.map((a) => (
            <tr key={a.name}>
              <td>{a.name}</td>
              <td class="mono">{a.clientId}</td>
              <td>{a.publicClient ? "Public: no secret" : "Confidential"}{a.registered && <span class="badge">registered</span>}</td>
              <td class="wrap">{a.redirectUris.join(" ")}</td>
              <td>{a.grantTypes.join(", ")}</td>
              <td>{a.providers.map(providerName).join(", ") || "—"}</td>
              <td class="row-actions">
                <button type="button" disabled={!choices.data} onClick={() => setEditing({ application: a })} aria-label={`Edit ${a.name}`}>Edit</button>
                {/* A public client has no secret to rotate (its Client type says so). */}
                {!a.publicClient && (
                  <button type="button" onClick={() => setRotating(a)} aria-label={`Rotate the secret of ${a.name}`}>Rotate secret</button>
                )}
                <button type="button" class="danger" onClick={() => setDeleting(a)} aria-label={`Delete ${a.name}`}>Delete</button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {editing && choices.data && (
        <ApplicationDialog application={editing.application} choices={choices.data} providers={(providers.data ?? []).map((p) => ({ value: p.name, label: p.displayName || p.name }))}
          onClose={() => setEditing(undefined)}
          onSave={async (input) => {
            // A secret comes back once: on creating a confidential client, or on turning a public one confidential; a public client has none.
            const saved = editing.application
              ? await applications.updateApplication({ application: input })
              : await applications.createApplication({ application: input });
            if (saved.clientSecret) setSecret({ name: saved.application?.name ?? input.name, value: saved.clientSecret });
            setEditing(undefined);
            list.reload();
          }} />
      )}
      {secret && <ShownOnce title={`Client secret of ${secret.name}`} label="Client Secret" value={secret.value} onClose={() => setSecret(undefined)} />}
      {rotating && (
        <Confirm title="Rotate client secret" action="Rotate" message={`Give ${rotating.name} a new client secret? The current one stops working at once.`}
          onClose={() => setRotating(undefined)}
          onConfirm={async () => {
            const rotated = await applications.rotateApplicationSecret({ name: rotating.name });
            setSecret({ name: rotating.name, value: rotated.clientSecret });
          }} />
      )}
      {deleting && (
        <Confirm title="Delete application" action="Delete"
          message={`Delete the ${deleting.registered ? "registered client" : "application"} ${deleting.name}? Its tokens stop working${deleting.registered ? ", and its registration access token with them" : ""}.`}
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await applications.deleteApplication({ name: deleting.name });
            list.reload();
          }} />
      )}
    </>
  );
}

/** What the public-client box means, and what saving it does to the secret the application has now. */
function publicClientNote(application: Application | undefined, publicClient: boolean): string {
  if (application && !application.publicClient && publicClient) return "Saving ends its client secret at once.";
  if (application?.publicClient && !publicClient) return "Saving gives it a new client secret, shown once.";
  return publicClient ? "Cannot use the password or client_credentials grants." : "";
}

function ApplicationDialog(props: {
  application?: Application;
  choices: Choices;
  providers: { value: string; label: string }[];
  onClose: () => void;
  onSave: (input: ReturnType<typeof inputOf>) => Promise<void>;
}) {
  const [form, setForm] = useState(() => formOf(props.choices, props.application));
  const { choices } = props;
  const editing = props.application !== undefined;
  const set = <K extends keyof ApplicationForm>(key: K) => (value: ApplicationForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  const { errors, busy, submit } = useSubmit(FORM_FIELDS, () => props.onSave(inputOf(form, editing)));
  return (
    <Dialog title={editing ? `Edit application ${props.application!.name}` : "New application"} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <div class="grid">
          <TextField id="app-name" label="Name" value={form.name} onValue={set("name")} error={errors.fields.name} required disabled={editing} />
          <TextField id="app-clientId" label="Client ID" value={form.clientId} onValue={set("clientId")} error={errors.fields.clientId}
            note={editing ? undefined : "Empty: the service makes one."} />
          <TextField id="app-redirectUris" label="Redirect URIs" multiline value={form.redirectUris} onValue={set("redirectUris")}
            error={errors.fields.redirectUris} note="One per line." />
          <TextField id="app-allowedOrigins" label="Allowed origins" multiline value={form.allowedOrigins} onValue={set("allowedOrigins")}
            error={errors.fields.allowedOrigins} note="Browser origins that may call the service across origins; one per line." />
          <TextField id="app-expireInHours" label="Token lifetime (hours)" type="number" value={form.expireInHours} onValue={set("expireInHours")}
            error={errors.fields.expireInHours} />
          <TextField id="app-refreshExpireInHours" label="Refresh expiry (hours)" type="number" value={form.refreshExpireInHours}
            onValue={set("refreshExpireInHours")} error={errors.fields.refreshExpireInHours} note="0: refresh tokens expire at once; above 0 to use them." />
          <SelectField id="app-tokenFormat" label="Token format" value={form.tokenFormat} options={choices.tokenFormats} onValue={set("tokenFormat")} error={errors.fields.tokenFormat} />
          <SelectField id="app-signingAlg" label="Signing algorithm" value={form.signingAlg} options={choices.signingAlgs} onValue={set("signingAlg")} error={errors.fields.signingAlg} />
          <SelectField id="app-accessTokenStrategy" label="Access token strategy" value={form.accessTokenStrategy} options={choices.accessTokenStrategies}
            onValue={set("accessTokenStrategy")} error={errors.fields.accessTokenStrategy} />
          {!form.publicClient && (
            <SelectField id="app-tokenEndpointAuthMethod" label="Client authentication" value={form.tokenEndpointAuthMethod}
              options={choices.tokenEndpointAuthMethods.filter((m) => m !== "none")} onValue={set("tokenEndpointAuthMethod")}
              error={errors.fields.tokenEndpointAuthMethod} note="How it proves itself at the token endpoint (OIDC Core §9)." />
          )}
          {form.tokenEndpointAuthMethod === "private_key_jwt" && !form.publicClient && (
            <>
              <TextField id="app-jwks" label="JWKS" multiline value={form.jwks} onValue={set("jwks")} error={errors.fields.jwks}
                note="Its public keys, a JWK Set as JSON; or leave it empty and give the JWKS URI." />
              <TextField id="app-jwksUri" label="JWKS URI" type="url" value={form.jwksUri} onValue={set("jwksUri")} error={errors.fields.jwksUri} />
            </>
          )}
          <TextField id="app-exchangeAudiences" label="Exchange audiences" multiline value={form.exchangeAudiences} onValue={set("exchangeAudiences")}
            error={errors.fields.exchangeAudiences} note="Token exchange (RFC 8693): client IDs or resource URIs it may exchange tokens for; one per line." />
          <TextField id="app-backchannelLogoutUri" label="Back-channel logout URI" type="url" value={form.backchannelLogoutUri} onValue={set("backchannelLogoutUri")}
            error={errors.fields.backchannelLogoutUri}
            note="Where logout tokens are sent when a session it has tokens from ends (OIDC Back-Channel Logout); https, or http on a loopback host. Empty: none." />
        </div>
        <CheckboxField id="app-publicClient" label="Public client (no secret: single-page or native app, PKCE)" checked={form.publicClient}
          onValue={set("publicClient")} error={errors.fields.publicClient} note={publicClientNote(props.application, form.publicClient)} />
        <CheckboxField id="app-signup" label="Sign-up: its login page offers Create account" checked={form.signup}
          onValue={set("signup")} error={errors.fields.signup} />
        <CheckboxField id="app-consentRequired" label="Consent: users allow it on a consent page" checked={form.consentRequired}
          onValue={set("consentRequired")} error={errors.fields.consentRequired}
          note={props.application?.registered ? "Always on for a registered client." : undefined} />
        <CheckboxField id="app-allowImpersonation" label="Impersonation: token exchange without an actor token" checked={form.allowImpersonation}
          onValue={set("allowImpersonation")} error={errors.fields.allowImpersonation} />
        <CheckboxField id="app-requirePushedAuthorizationRequests" label="PAR: its authorize requests must be pushed first (RFC 9126)"
          checked={form.requirePushedAuthorizationRequests} onValue={set("requirePushedAuthorizationRequests")} error={errors.fields.requirePushedAuthorizationRequests} />
        <CheckboxField id="app-dpopBoundAccessTokens" label="DPoP: its token requests need a DPoP proof, binding its tokens to its key (RFC 9449)"
          checked={form.dpopBoundAccessTokens} onValue={set("dpopBoundAccessTokens")} error={errors.fields.dpopBoundAccessTokens} />
        <CheckboxField id="app-backchannelLogoutSessionRequired" label="Logout session required: its logout tokens must carry sid"
          checked={form.backchannelLogoutSessionRequired} onValue={set("backchannelLogoutSessionRequired")}
          error={errors.fields.backchannelLogoutSessionRequired} note="They always do." />
        <CheckboxField id="app-allowPrivateBackchannelLogoutUri" label="Private logout URI: the back-channel logout URI may be a private or link-local address"
          checked={form.allowPrivateBackchannelLogoutUri} onValue={set("allowPrivateBackchannelLogoutUri")}
          error={errors.fields.allowPrivateBackchannelLogoutUri} />
        <CheckboxField id="app-profile" label="FAPI 2.0: held to the FAPI 2.0 Security Profile" checked={form.profile === "fapi2"}
          onValue={(on) => set("profile")(on ? "fapi2" : "")} error={errors.fields.profile}
          note="private_key_jwt, PS256, ES256 or EdDSA, no implicit or password grant; PAR, PKCE and DPoP on every sign-in." />
        <CheckboxGroup id="app-grantTypes" legend="Grant types" options={choices.grantTypes.map((g) => ({ value: g.grantType, label: g.grantType, always: g.alwaysOn }))} values={form.grantTypes}
          onValues={set("grantTypes")} error={errors.fields.grantTypes} />
        <CheckboxGroup id="app-providers" legend="Providers on its login page" options={props.providers} values={form.providers} onValues={set("providers")}
          error={errors.fields.providers} />
        <FormActions busy={busy} submit={editing ? "Save" : "Create"} onCancel={props.onClose} error={errors.form} />
      </form>
    </Dialog>
  );
}
