import type { ServiceImpl } from "@connectrpc/connect";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import type { Domain } from "../domain/index.js";
import { discoveryDocument } from "../oauth/discovery.js";
import { everyMethod } from "./guards.js";

// Public documents: nothing runs before them.
export const discoveryGuards = everyMethod(DiscoveryService, []);

export function discoveryService(domain: Domain): ServiceImpl<typeof DiscoveryService> {
  const document = discoveryDocument(domain.issuer);
  return {
    getConfiguration: () => document,
    async getJwks() {
      return { keys: await domain.keys.publicJwks() };
    },
  };
}
