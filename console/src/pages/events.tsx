import { useState } from "preact/hooks";
import { EventAdminService, type AuditEvent } from "../../../gen/identity/v1/events_pb.js";
import type { PageProps } from "../app.js";
import { Notice, PageHeading, PagerButton, Table, TextField, useLoad } from "../ui.js";

const PAGE_SIZE = 50;

interface Filters {
  user: string;
  clientId: string;
  type: string;
}

const actorOf = (e: AuditEvent) => (e.actor ? `${e.actor.kind} ${e.actor.name || e.actor.id}`.trim() : "");
const timeOf = (ms: bigint) => new Date(Number(ms)).toISOString().replace("T", " ").replace(/Z$/, " UTC");

/** The audit trail, newest first, filtered by user, application or event name. */
export function EventsPage({ clients }: PageProps) {
  const events = clients(EventAdminService);
  const [form, setForm] = useState<Filters>({ user: "", clientId: "", type: "" });
  const [filters, setFilters] = useState<Filters>(form);
  // Page tokens of the pages seen: the service pages from the newest back.
  const [tokens, setTokens] = useState<string[]>([""]);
  const list = useLoad(() => events.listEvents({ ...filters, pageSize: PAGE_SIZE, pageToken: tokens.at(-1)! }), [filters, tokens]);
  const set = (key: keyof Filters) => (value: string) => setForm((f) => ({ ...f, [key]: value }));
  const shown = list.data?.events ?? [];
  return (
    <>
      <PageHeading title="Events" />
      <p class="lead">The audit trail: sign-ins, tokens, lockouts and every admin change, with who made it.</p>
      <form class="inline" onSubmit={(e) => { e.preventDefault(); setFilters({ ...form }); setTokens([""]); }}>
        <TextField id="events-user" label="User" value={form.user} onValue={set("user")} />
        <TextField id="events-clientId" label="Client ID" value={form.clientId} onValue={set("clientId")} />
        <TextField id="events-type" label="Event" value={form.type} onValue={set("type")} placeholder="e.g. sign_in" />
        <button type="submit" class="primary">Filter</button>
      </form>
      <Notice error={list.error} />
      {!list.data && !list.error && <p class="note">Loading…</p>}
      {list.data && shown.length === 0 && <p>No events.</p>}
      {shown.length > 0 && (
        <Table columns={["Time", "Event", "Outcome", "By", "User", "Client ID", "Address", "Details"]}>
          {shown.map((e) => (
            <tr key={e.id}>
              <td class="nowrap">{timeOf(e.timeMs)}</td>
              <td>{e.event}</td>
              <td>{e.outcome}</td>
              <td>{actorOf(e)}</td>
              <td>{e.userName || e.userId}</td>
              <td class="mono">{e.clientId}</td>
              <td class="mono">{e.clientAddress}</td>
              <td class="mono wrap">{e.detailsJson}</td>
            </tr>
          ))}
        </Table>
      )}
      <nav class="pager" aria-label="Pages of events">
        <PagerButton enabled={tokens.length > 1} onClick={() => setTokens([""])}>Newest</PagerButton>
        <PagerButton enabled={!!list.data?.nextPageToken} onClick={() => setTokens([...tokens, list.data!.nextPageToken])}>Older</PagerButton>
      </nav>
    </>
  );
}
