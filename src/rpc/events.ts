import type { ServiceImpl } from "@connectrpc/connect";
import { EventAdminService } from "../../gen/identity/v1/events_pb.js";
import type { AuditPage } from "../domain/auditTrail.js";
import type { Domain } from "../domain/index.js";
import { everyMethod } from "./guards.js";

/** Events per page when the caller names no size. */
const DEFAULT_PAGE_SIZE = 100;

// The audit trail tells who did what: admins only, and never cached.
export const eventAdminGuards = everyMethod(EventAdminService, ["noStore", "admin"]);

function eventOut(e: AuditPage["events"][number]) {
  return {
    id: e.id,
    event: e.event,
    timeMs: BigInt(e.time),
    outcome: e.outcome,
    actor: e.actor,
    clientAddress: e.clientAddress ?? "",
    clientId: e.clientId ?? "",
    userId: e.userId ?? "",
    userName: e.userName ?? "",
    detailsJson: e.details === null ? "" : JSON.stringify(e.details),
  };
}

export function eventAdminService(domain: Domain): ServiceImpl<typeof EventAdminService> {
  return {
    async listEvents(req) {
      const page = await domain.auditEvents({
        userName: req.user,
        clientId: req.clientId,
        event: req.type,
        since: req.sinceMs > 0n ? Number(req.sinceMs) : undefined,
        pageSize: req.pageSize === 0 ? DEFAULT_PAGE_SIZE : req.pageSize,
        pageToken: req.pageToken,
      });
      return { events: page.events.map(eventOut), nextPageToken: page.nextPageToken };
    },
  };
}
