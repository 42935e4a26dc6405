import { useState } from "preact/hooks";
import { ResourceAdminService, type Resource } from "../../../gen/identity/v1/resources_pb.js";
import type { PageProps } from "../app.js";
import { Confirm, Dialog, FormActions, Notice, PageHeading, Table, TextField, useLoad, useSubmit } from "../ui.js";

interface ResourceForm {
  uri: string;
  name: string;
  /** One scope a line: `name description`. */
  scopes: string;
}

const FORM_FIELDS = ["uri", "name", "scopes"];

const formOf = (r?: Resource): ResourceForm => ({
  uri: r?.uri ?? "",
  name: r?.name ?? "",
  scopes: r?.scopes.map((s) => (s.description ? `${s.name} ${s.description}` : s.name)).join("\n") ?? "",
});

/** Each line's first word is the scope, the rest of the line its description. */
const scopesOf = (text: string) =>
  text.split("\n").map((l) => l.trim()).filter(Boolean).map((line) => {
    const space = line.search(/\s/);
    return space < 0 ? { name: line, description: "" } : { name: line.slice(0, space), description: line.slice(space).trim() };
  });

/** Resource servers (RFC 8707): the APIs tokens may be meant for, with the scopes the consent page describes (issue 43 §1). */
export function ResourcesPage({ clients }: PageProps) {
  const resources = clients(ResourceAdminService);
  const list = useLoad(async () => (await resources.listResources({})).resources);
  const [editing, setEditing] = useState<{ resource?: Resource }>();
  const [deleting, setDeleting] = useState<Resource>();
  return (
    <>
      <PageHeading title="Resources">
        <button type="button" class="primary" onClick={() => setEditing({})}>New resource</button>
      </PageHeading>
      <p class="lead">APIs that access tokens may be meant for: a token asked for with <code>resource=URI</code> carries the URI as its audience.</p>
      <Notice error={list.error} />
      {!list.data && !list.error && <p class="note">Loading…</p>}
      {list.data && list.data.length === 0 && <p>No resources yet.</p>}
      {list.data && list.data.length > 0 && (
        <Table columns={["Name", "URI", "Scopes"]} actions>
          {list.data.map((r) => (
            <tr key={r.uri}>
              <td>{r.name}</td>
              <td class="mono wrap">{r.uri}</td>
              <td class="wrap">
                {r.scopes.length === 0 ? "—" : (
                  <ul class="plain">{r.scopes.map((s) => <li key={s.name}><span class="mono">{s.name}</span>{s.description && `: ${s.description}`}</li>)}</ul>
                )}
              </td>
              <td class="row-actions">
                <button type="button" onClick={() => setEditing({ resource: r })} aria-label={`Edit ${r.name}`}>Edit</button>
                <button type="button" class="danger" onClick={() => setDeleting(r)} aria-label={`Delete ${r.name}`}>Delete</button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {editing && (
        <ResourceDialog resource={editing.resource} onClose={() => setEditing(undefined)}
          onSave={async (form) => {
            const input = { uri: form.uri.trim(), name: form.name.trim(), scopes: scopesOf(form.scopes), replaceScopes: true };
            if (editing.resource) await resources.updateResource({ resource: input });
            else await resources.createResource({ resource: input });
            setEditing(undefined);
            list.reload();
          }} />
      )}
      {deleting && (
        <Confirm title="Delete resource" action="Delete" message={`Delete the resource ${deleting.name}? Tokens already issued for it keep their audience; new ones cannot name it.`}
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await resources.deleteResource({ uri: deleting.uri });
            list.reload();
          }} />
      )}
    </>
  );
}

function ResourceDialog(props: { resource?: Resource; onClose: () => void; onSave: (form: ResourceForm) => Promise<void> }) {
  const [form, setForm] = useState(() => formOf(props.resource));
  const editing = props.resource !== undefined;
  const set = <K extends keyof ResourceForm>(key: K) => (value: ResourceForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  const { errors, busy, submit } = useSubmit(FORM_FIELDS, () => props.onSave(form));
  return (
    <Dialog title={editing ? `Edit resource ${props.resource!.name}` : "New resource"} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <div class="grid">
          <TextField id="resource-uri" label="URI" type="url" value={form.uri} onValue={set("uri")} error={errors.fields.uri} required disabled={editing}
            note="https, or http on a loopback host; no fragment." />
          <TextField id="resource-name" label="Name" value={form.name} onValue={set("name")} error={errors.fields.name} required />
        </div>
        <TextField id="resource-scopes" label="Scopes" multiline value={form.scopes} onValue={set("scopes")} error={errors.fields.scopes}
          note="One a line: the scope, a space, then the line the consent page shows for it (mcp:tools Use your tools)." />
        <FormActions busy={busy} submit={editing ? "Save" : "Create"} onCancel={props.onClose} error={errors.form} />
      </form>
    </Dialog>
  );
}
