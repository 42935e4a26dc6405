import { useState } from "preact/hooks";
import { KeyAdminService } from "../../../gen/identity/v1/admin_pb.js";
import type { PageProps } from "../app.js";
import { SIGNING_ALGS } from "../choices.js";
import { failureOf } from "../rpc.js";
import { formatTime, Notice, PageHeading, SelectField, Table, useLoad } from "../ui.js";

export function KeysPage({ clients }: PageProps) {
  const keys = clients(KeyAdminService);
  const list = useLoad(async () => (await keys.listKeys({})).keys);
  const [alg, setAlg] = useState<string>(SIGNING_ALGS[0]);
  const [status, setStatus] = useState<{ error?: string; done?: string }>({});
  const [busy, setBusy] = useState(false);
  const rotate = async () => {
    setBusy(true);
    try {
      const { key } = await keys.rotateKey({ alg });
      setStatus({ done: `A new ${alg} key, ${key?.kid}, signs from ${formatTime(key?.activeFrom ?? 0n)}.` });
      list.reload();
    } catch (err) {
      setStatus({ error: failureOf(err).message });
    }
    setBusy(false);
  };
  return (
    <>
      <PageHeading title="Signing keys" />
      <p class="lead">The keys that sign ID tokens and JWT access tokens, newest first. Rotating publishes a new key; the old one keeps verifying until it retires.</p>
      <form class="inline" onSubmit={(e) => { e.preventDefault(); void rotate(); }}>
        <SelectField id="rotate-alg" label="Algorithm" value={alg} options={SIGNING_ALGS} onValue={setAlg} />
        <button type="submit" class="primary" disabled={busy}>Rotate key</button>
      </form>
      <Notice error={status.error} />
      {status.done && <p class="ok" role="status">{status.done}</p>}
      <Notice error={list.error} />
      {!list.data && !list.error && <p class="note">Loading…</p>}
      {list.data && (
        <Table columns={["kid", "alg", "Created", "Signs from", "Retired", "Signing"]}>
          {list.data.map((k) => (
            <tr key={k.kid}>
              <td class="mono">{k.kid}</td>
              <td>{k.alg}</td>
              <td>{formatTime(k.createdTime)}</td>
              <td>{formatTime(k.activeFrom)}</td>
              <td>{k.retiredTime ? formatTime(k.retiredTime) : "—"}</td>
              <td>{k.signing ? "Yes" : "No"}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
