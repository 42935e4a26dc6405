import { useState } from "preact/hooks";
import { UserAdminService, type User } from "../../../gen/identity/v1/admin_pb.js";
import type { PageProps } from "../app.js";
import { failureOf } from "../rpc.js";
import { CheckboxField, Confirm, Dialog, FormActions, Notice, PageHeading, PagerButton, Table, TextField, useLoad, useSubmit } from "../ui.js";

const PAGE_SIZE = 20;

const TEXT_FIELDS = [
  ["displayName", "Display name", "text"],
  ["email", "Email", "email"],
  ["avatar", "Avatar", "url"],
  ["phone", "Phone", "tel"],
  ["address", "Address", "text"],
] as const;
type TextKey = (typeof TEXT_FIELDS)[number][0];

interface UserForm extends Record<TextKey, string> {
  name: string;
  password: string;
  emailVerified: boolean;
  isAdmin: boolean;
  disabled: boolean;
}

const FORM_FIELDS = ["name", "password", "emailVerified", "isAdmin", "disabled", ...TEXT_FIELDS.map(([key]) => key)];

function formOf(u?: User): UserForm {
  return {
    name: u?.name ?? "", password: "", displayName: u?.displayName ?? "", email: u?.email ?? "", avatar: u?.avatar ?? "",
    phone: u?.phone ?? "", address: u?.address ?? "", emailVerified: u?.emailVerified ?? false, isAdmin: u?.isAdmin ?? false,
    disabled: u?.disabled ?? false,
  };
}

export function UsersPage({ clients }: PageProps) {
  const users = clients(UserAdminService);
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  // The page tokens of the pages seen so far: the service pages forward only.
  const [tokens, setTokens] = useState<string[]>([""]);
  const list = useLoad(() => users.listUsers({ search: query, pageSize: PAGE_SIZE, pageToken: tokens.at(-1)! }), [query, tokens]);
  const [editing, setEditing] = useState<{ user?: User }>();
  const [settingPassword, setSettingPassword] = useState<User>();
  const [deleting, setDeleting] = useState<User>();
  const [actionError, setActionError] = useState<string>();

  const shown = list.data?.users ?? [];
  const total = list.data?.totalSize ?? 0;
  const pageNumber = tokens.length;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));

  const [mailed, setMailed] = useState<string>();
  // Issue 47 §4: a single-use link to the user's address; the service needs mail configured.
  const sendVerification = async (u: User) => {
    try {
      await users.sendVerificationEmail({ name: u.name });
      setActionError(undefined);
      setMailed(`A verification mail is on its way to ${u.email}.`);
    } catch (err) {
      setMailed(undefined);
      setActionError(failureOf(err).message);
    }
  };

  const setDisabled = async (u: User, disabled: boolean) => {
    try {
      await users.updateUser({ user: { name: u.name, disabled } });
      setActionError(undefined);
      list.reload();
    } catch (err) {
      setActionError(failureOf(err).message);
    }
  };

  return (
    <>
      <PageHeading title="Users">
        <button type="button" class="primary" onClick={() => setEditing({})}>New user</button>
      </PageHeading>
      <form class="inline" role="search" onSubmit={(e) => { e.preventDefault(); setQuery(search); setTokens([""]); }}>
        <TextField id="user-search" label="Search" type="search" value={search} onValue={setSearch} placeholder="Name, display name or email" />
        <button type="submit">Search</button>
      </form>
      <Notice error={list.error ?? actionError} />
      {mailed && <p role="status">{mailed}</p>}
      {list.data && shown.length === 0 && <p>No users found.</p>}
      {shown.length > 0 && (
        <Table columns={["Name", "Display name", "Email", "Role", "Status"]} actions>
          {shown.map((u) => (
            <tr key={u.id}>
              <td>{u.name}</td>
              <td>{u.displayName}</td>
              <td>{u.email}</td>
              <td>{u.isAdmin ? "Administrator" : "User"}</td>
              <td>{u.disabled ? "Disabled" : "Active"}</td>
              <td class="row-actions">
                <button type="button" onClick={() => setEditing({ user: u })} aria-label={`Edit ${u.name}`}>Edit</button>
                <button type="button" onClick={() => setSettingPassword(u)} aria-label={`Set password of ${u.name}`}>Set password</button>
                <button type="button" onClick={() => void setDisabled(u, !u.disabled)} aria-label={`${u.disabled ? "Enable" : "Disable"} ${u.name}`}>
                  {u.disabled ? "Enable" : "Disable"}
                </button>
                {u.email && !u.emailVerified && (
                  <button type="button" onClick={() => void sendVerification(u)} aria-label={`Send verification email to ${u.name}`}>Send verification email</button>
                )}
                <a class="button" href={`#/user?name=${encodeURIComponent(u.name)}`} aria-label={`Consents and factors of ${u.name}`}>Consents and factors</a>
                <a class="button" href={`#/sessions?user=${encodeURIComponent(u.name)}`} aria-label={`Sessions of ${u.name}`}>Sessions</a>
                <button type="button" class="danger" onClick={() => setDeleting(u)} aria-label={`Delete ${u.name}`}>Delete</button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <nav class="pager" aria-label="Pages of users">
        <PagerButton enabled={pageNumber > 1} onClick={() => setTokens(tokens.slice(0, -1))}>Previous</PagerButton>
        <span>{list.data ? `Page ${pageNumber} of ${pages} · ${total} ${total === 1 ? "user" : "users"}` : "Loading…"}</span>
        <PagerButton enabled={!!list.data?.nextPageToken} onClick={() => setTokens([...tokens, list.data!.nextPageToken])}>Next</PagerButton>
      </nav>
      {editing && (
        <UserDialog user={editing.user} onClose={() => setEditing(undefined)}
          onSave={async (form) => {
            const { password, ...fields } = form;
            // A new address is unverified until proven (issue 47 §4), unless the admin ticked the box in this change.
            if (editing.user && fields.email !== editing.user.email && fields.emailVerified === editing.user.emailVerified) fields.emailVerified = false;
            if (editing.user) await users.updateUser({ user: fields });
            else await users.createUser({ user: { ...fields, password } });
            setEditing(undefined);
            list.reload();
          }} />
      )}
      {settingPassword && (
        <PasswordDialog user={settingPassword} onClose={() => setSettingPassword(undefined)}
          onSave={async (password) => {
            await users.updateUser({ user: { name: settingPassword.name, password } });
            setSettingPassword(undefined);
          }} />
      )}
      {deleting && (
        <Confirm title="Delete user" action="Delete" message={`Delete the user ${deleting.name}? Their sessions and tokens end.`}
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await users.deleteUser({ name: deleting.name });
            list.reload();
          }} />
      )}
    </>
  );
}

function UserDialog(props: { user?: User; onClose: () => void; onSave: (form: UserForm) => Promise<void> }) {
  const [form, setForm] = useState(() => formOf(props.user));
  const { errors, busy, submit } = useSubmit(FORM_FIELDS, () => props.onSave({ ...form, name: form.name.trim() }));
  const editing = props.user !== undefined;
  const set = <K extends keyof UserForm>(key: K) => (value: UserForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  return (
    <Dialog title={editing ? `Edit user ${props.user!.name}` : "New user"} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <div class="grid">
          <TextField id="user-name" label="Name" value={form.name} onValue={set("name")} error={errors.fields.name} required disabled={editing} />
          {!editing && (
            <TextField id="user-password" label="Password" type="password" autoComplete="new-password" value={form.password} onValue={set("password")}
              error={errors.fields.password} />
          )}
          {TEXT_FIELDS.map(([key, label, type]) => (
            <TextField key={key} id={`user-${key}`} label={label} type={type} value={form[key]} onValue={set(key)} error={errors.fields[key]} />
          ))}
        </div>
        <CheckboxField id="user-emailVerified" label="Email verified" checked={form.emailVerified} onValue={set("emailVerified")} error={errors.fields.emailVerified} />
        <CheckboxField id="user-isAdmin" label="Administrator" checked={form.isAdmin} onValue={set("isAdmin")} error={errors.fields.isAdmin}
          note="May sign in to this console." />
        <CheckboxField id="user-disabled" label="Disabled" checked={form.disabled} onValue={set("disabled")} error={errors.fields.disabled}
          note="Cannot sign in." />
        <FormActions busy={busy} submit={editing ? "Save" : "Create"} onCancel={props.onClose} error={errors.form} />
      </form>
    </Dialog>
  );
}

function PasswordDialog(props: { user: User; onClose: () => void; onSave: (password: string) => Promise<void> }) {
  const [password, setPassword] = useState("");
  const { errors, busy, submit } = useSubmit(["password"], () => props.onSave(password));
  return (
    <Dialog title={`Set password of ${props.user.name}`} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <TextField id="user-new-password" label="New password" type="password" autoComplete="new-password" value={password} onValue={setPassword}
          error={errors.fields.password} />
        <FormActions busy={busy} submit="Set password" onCancel={props.onClose} error={errors.form} />
      </form>
    </Dialog>
  );
}
