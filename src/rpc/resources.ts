import type { ServiceImpl } from "@connectrpc/connect";
import { ResourceAdminService, type ResourceInput as ResourceInputMessage } from "../../gen/identity/v1/resources_pb.js";
import { parseResourceInput } from "../accounts/resources.js";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import { epochSecondsOf } from "./adminAuth.js";
import { everyMethod } from "./guards.js";
import type { ResourceRecord } from "../shared/model.js";

export const resourceAdminGuards = everyMethod(ResourceAdminService, ["noStore", "admin"]);

const resourceOut = (r: ResourceRecord) => ({
  uri: r.uri,
  name: r.name,
  scopes: r.scopes,
  createdTime: epochSecondsOf(r.createdAt),
  updatedTime: epochSecondsOf(r.updatedAt),
});

/** Proto input to the plain object the shared validation reads; unset stays unset. */
function resourceInput(input: ResourceInputMessage | undefined) {
  if (!input) throw new OAuthError("invalid_request", "resource: is required");
  const scopes = input.scopes.length > 0 || input.replaceScopes ? input.scopes.map(({ name, description }) => ({ name, description })) : undefined;
  return parseResourceInput({ uri: input.uri, name: input.name, ...(scopes ? { scopes } : {}) });
}

export function resourceAdminService(domain: Domain): ServiceImpl<typeof ResourceAdminService> {
  const admin = domain.resourceAdmin;
  return {
    async listResources() {
      return { resources: (await admin.list()).map(resourceOut) };
    },
    async getResource(req) {
      return { resource: resourceOut(await admin.get(req.uri)) };
    },
    async createResource(req) {
      return { resource: resourceOut(await admin.create(resourceInput(req.resource))) };
    },
    async updateResource(req) {
      return { resource: resourceOut(await admin.update(resourceInput(req.resource))) };
    },
    async deleteResource(req) {
      await admin.delete(req.uri);
      return {};
    },
  };
}
