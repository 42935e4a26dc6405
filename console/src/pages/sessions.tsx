import { useState } from "preact/hooks";
import { SessionAdminService, type BrowserSession, type RefreshTokenGrant } from "../../../gen/identity/v1/admin_pb.js";
import type { PageProps } from "../app.js";
import { Confirm, formatTime, Notice, PageHeading, Table, TextField, useLoad } from "../ui.js";

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

type Revoking =
  | { kind: "session"; item: BrowserSession }
  | { kind: "refresh"; item: RefreshTokenGrant }
  | { kind: "all" };

/** One user's sign-ins at the login page and the refresh tokens applications hold for them, each revocable. */
export function SessionsPage({ clients }: PageProps) {
  const sessions = clients(SessionAdminService);
  const [name, setName] = useState(() => new URLSearchParams(location.hash.split("?")[1] ?? "").get("user") ?? "");
  const [user, setUser] = useState(name);
  const list = useLoad(async () => (user ? sessions.listUserSessions({ user }) : undefined), [user]);
  const [revoking, setRevoking] = useState<Revoking>();
  const [done, setDone] = useState<string>();

  // The same user again is a fresh look (a session may have begun since), not nothing.
  const show = (asked: string) => (asked === user ? list.reload() : setUser(asked));

  const revoke = async (what: Revoking) => {
    if (what.kind === "session") await sessions.revokeSession({ user, sessionId: what.item.id });
    else if (what.kind === "refresh") await sessions.revokeRefreshToken({ user, refreshTokenId: what.item.id });
    else {
      const counts = await sessions.revokeAllUserSessions({ user });
      setDone(`Ended ${count(counts.sessionsRevoked, "session")} and ${count(counts.refreshTokensRevoked, "refresh token")} of ${user}.`);
      return list.reload();
    }
    setDone(undefined);
    list.reload();
  };

  return (
    <>
      <PageHeading title="Sessions" />
      <p class="lead">A user's sign-ins at the login page, and the refresh tokens applications hold for them. Revoking one ends it at once.</p>
      <form class="inline" onSubmit={(e) => { e.preventDefault(); setDone(undefined); show(name.trim()); }}>
        <TextField id="sessions-user" label="User" value={name} onValue={setName} placeholder="The user's name" />
        <button type="submit" class="primary">Show sessions</button>
      </form>
      <Notice error={list.error} />
      {user && !list.data && !list.error && <p class="note">Loading…</p>}
      {done && <p class="ok" role="status">{done}</p>}
      {list.data && (
        <>
          <section aria-labelledby="browser-sessions">
            <h2 id="browser-sessions">Sessions of {user}</h2>
            {list.data.sessions.length === 0 ? <p>No active sessions.</p> : (
              <Table columns={["Session", "Signed in", "Expires"]} actions>
                {list.data.sessions.map((s) => (
                  <tr key={s.id}>
                    <td class="mono">{s.id}</td>
                    <td>{formatTime(s.authTime)}</td>
                    <td>{formatTime(s.expireTime)}</td>
                    <td class="row-actions">
                      <button type="button" class="danger" onClick={() => setRevoking({ kind: "session", item: s })} aria-label={`Revoke session ${s.id}`}>Revoke</button>
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </section>
          <section aria-labelledby="refresh-tokens">
            <h2 id="refresh-tokens">Refresh tokens of {user}</h2>
            {list.data.refreshTokens.length === 0 ? <p>No live refresh tokens.</p> : (
              <Table columns={["Application", "Scope", "Signed in", "Issued", "Expires"]} actions>
                {list.data.refreshTokens.map((t) => (
                  <tr key={t.id}>
                    <td>{t.application || t.clientId}</td>
                    <td>{t.scope}</td>
                    <td>{formatTime(t.authTime)}</td>
                    <td>{formatTime(t.issuedTime)}</td>
                    <td>{t.expireTime ? formatTime(t.expireTime) : "Never"}</td>
                    <td class="row-actions">
                      <button type="button" class="danger" onClick={() => setRevoking({ kind: "refresh", item: t })}
                        aria-label={`Revoke refresh token of ${t.application || t.clientId} (${t.id})`}>Revoke</button>
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </section>
          {(list.data.sessions.length > 0 || list.data.refreshTokens.length > 0) && (
            <div class="actions">
              <button type="button" class="danger" onClick={() => setRevoking({ kind: "all" })}>Revoke all of {user}</button>
            </div>
          )}
        </>
      )}
      {revoking && (
        <Confirm title="Revoke" action="Revoke"
          message={revoking.kind === "all" ? `End every session and refresh token of ${user}?` : revoking.kind === "session" ? `End this session of ${user}?` : `Revoke this refresh token of ${user}? The application must sign the user in again.`}
          onClose={() => setRevoking(undefined)}
          onConfirm={() => revoke(revoking)} />
      )}
    </>
  );
}
