import type { ServiceImpl } from "@connectrpc/connect";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import type { Domain } from "../domain/index.js";
import { discoveryDocument } from "../oauth/discovery.js";
import { everyMethod } from "./guards.js";

// Public documents: nothing runs before them.
export const discoveryGuards = everyMethod(DiscoveryService, []);

export function discoveryService(domain: Domain): ServiceImpl<typeof DiscoveryService> {
  return {
    // The signing algorithms follow the keys: an algorithm is listed once its first key exists.
    getConfiguration: async () => discoveryDocument(domain.issuer, await domain.keys.algorithms()),
    async getJwks() {
      return { keys: await domain.keys.publicJwks() };
    },
  };
}
