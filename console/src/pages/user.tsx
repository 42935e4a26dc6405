import { useState } from "preact/hooks";
import { UserAdminService, type UserFactor } from "../../../gen/identity/v1/admin_pb.js";
import { ConsentAdminService, type Consent } from "../../../gen/identity/v1/consents_pb.js";
import type { PageProps } from "../app.js";
import { Confirm, formatTime, Notice, PageHeading, Table, useLoad } from "../ui.js";

type Removing = { kind: "consent"; item: Consent } | { kind: "factor"; item: UserFactor };

const FACTOR_TYPES: Record<string, string> = { totp: "One-time codes", passkey: "Passkey" };

/**
 * One user's page (`#/user?name=alice`), reached from the Users page: the
 * applications they allowed, each revocable (issue 43 §2), and their second
 * factors, each removable (issue 46 §4).
 */
export function UserPage({ clients }: PageProps) {
  const users = clients(UserAdminService);
  const consents = clients(ConsentAdminService);
  const [name] = useState(() => new URLSearchParams(location.hash.split("?")[1] ?? "").get("name") ?? "");
  const allowed = useLoad(async () => (await consents.listConsents({ user: name })).consents, [name]);
  const factors = useLoad(() => users.listUserFactors({ user: name }), [name]);
  const [removing, setRemoving] = useState<Removing>();
  const [done, setDone] = useState<string>();

  const remove = async (what: Removing) => {
    if (what.kind === "consent") {
      const revoked = await consents.revokeConsent({ user: name, clientId: what.item.clientId });
      setDone(`Revoked what ${name} allowed ${what.item.application}; ${revoked.refreshTokensRevoked} refresh ${revoked.refreshTokensRevoked === 1 ? "token" : "tokens"} ended.`);
      allowed.reload();
    } else {
      await users.removeUserFactor({ user: name, factorId: what.item.id });
      setDone(`Removed ${what.item.name || FACTOR_TYPES[what.item.type] || what.item.type} of ${name}.`);
      factors.reload();
    }
  };

  return (
    <>
      <PageHeading title={`User ${name}`}>
        <a class="button" href={`#/sessions?user=${encodeURIComponent(name)}`}>Sessions</a>
      </PageHeading>
      <p class="lead"><a href="#/users">All users</a></p>
      {done && <p class="ok" role="status">{done}</p>}
      <section aria-labelledby="user-consents">
        <h2 id="user-consents">Applications {name} allowed</h2>
        <Notice error={allowed.error} />
        {!allowed.data && !allowed.error && <p class="note">Loading…</p>}
        {allowed.data && allowed.data.length === 0 && <p>No consents.</p>}
        {allowed.data && allowed.data.length > 0 && (
          <Table columns={["Application", "Client ID", "Scopes", "Resources", "Allowed"]} actions>
            {allowed.data.map((c) => (
              <tr key={c.clientId}>
                <td>{c.application}{c.registered && <span class="badge">registered</span>}</td>
                <td class="mono">{c.clientId}</td>
                <td>{c.scopes.join(" ")}</td>
                <td class="wrap">{c.resources.map((r) => r.name || r.uri).join(", ") || "—"}</td>
                <td>{formatTime(c.grantedTime)}</td>
                <td class="row-actions">
                  <button type="button" class="danger" onClick={() => setRemoving({ kind: "consent", item: c })} aria-label={`Revoke consent to ${c.application}`}>Revoke</button>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </section>
      <section aria-labelledby="user-factors">
        <h2 id="user-factors">Second factors of {name}</h2>
        <Notice error={factors.error} />
        {factors.data && factors.data.factors.length === 0 && <p>No second factors.</p>}
        {factors.data && factors.data.factors.length > 0 && (
          <Table columns={["Type", "Name", "Added", "Last used"]} actions>
            {factors.data.factors.map((f) => (
              <tr key={f.id}>
                <td>{FACTOR_TYPES[f.type] ?? f.type}</td>
                <td>{f.name || "—"}</td>
                <td>{formatTime(f.createdTime)}</td>
                <td>{f.lastUsedTime ? formatTime(f.lastUsedTime) : "Never"}</td>
                <td class="row-actions">
                  <button type="button" class="danger" onClick={() => setRemoving({ kind: "factor", item: f })} aria-label={`Remove ${f.name || FACTOR_TYPES[f.type] || f.type}`}>Remove</button>
                </td>
              </tr>
            ))}
          </Table>
        )}
        {factors.data && <p class="note">Recovery codes left: {factors.data.recoveryCodesLeft}</p>}
      </section>
      {removing && (
        <Confirm title={removing.kind === "consent" ? "Revoke consent" : "Remove second factor"} action={removing.kind === "consent" ? "Revoke" : "Remove"}
          message={removing.kind === "consent"
            ? `Revoke what ${name} allowed ${removing.item.application}? Its refresh tokens for ${name} end, and it must ask again.`
            : `Remove this second factor of ${name}? They sign in without it, or enrol another where an application requires one.`}
          onClose={() => setRemoving(undefined)}
          onConfirm={() => remove(removing)} />
      )}
    </>
  );
}
