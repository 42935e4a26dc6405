import type { ServiceImpl } from "@connectrpc/connect";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import type { Domain } from "../domain/index.js";
import { discoveryDocument, protectedResourceDocument } from "../oauth/discovery.js";
import { everyMethod } from "./guards.js";

// Public documents: nothing runs before them.
export const discoveryGuards = everyMethod(DiscoveryService, []);

export function discoveryService(domain: Domain): ServiceImpl<typeof DiscoveryService> {
  // Built again only when the algorithms change, as before they followed the keys.
  let built: { algs: string; document: ReturnType<typeof discoveryDocument> } | undefined;
  return {
    // The signing algorithms follow the keys: an algorithm is listed once its first key exists.
    async getConfiguration() {
      const algorithms = await domain.keys.algorithms();
      const algs = algorithms.join(" ");
      const { mode } = domain.registration.policy;
      // Open registration reads client ID metadata documents too (accounts/clientMetadataDocuments.ts).
      const registration = mode === "off" ? undefined : { metadataDocuments: mode === "open" };
      if (built?.algs !== algs) built = { algs, document: discoveryDocument(domain.issuer, algorithms, registration, domain.authorize.requirePushed) };
      return built.document;
    },
    async getProtectedResourceMetadata() {
      return protectedResourceDocument(domain.issuer);
    },
    async getJwks() {
      return { keys: await domain.keys.publicJwks() };
    },
  };
}
