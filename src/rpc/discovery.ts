import type { ServiceImpl } from "@connectrpc/connect";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import type { Domain } from "../domain/index.js";
import { discoveryDocument, protectedResourceDocument } from "../oauth/discovery.js";
import { everyMethod } from "./guards.js";

// Public documents: nothing runs before them.
export const discoveryGuards = everyMethod(DiscoveryService, []);

export function discoveryService(domain: Domain): ServiceImpl<typeof DiscoveryService> {
  // Built again only when what it depends on changes.
  let built: { of: string; document: ReturnType<typeof discoveryDocument> } | undefined;
  return {
    async getConfiguration() {
      const { mode } = domain.registration.policy;
      const requirePushed = domain.authorize.requirePushed;
      // Open registration reads client ID metadata documents too (accounts/clientMetadataDocuments.ts).
      const registration = mode === "off" ? undefined : { metadataDocuments: mode === "open" };
      const of = `${mode} ${requirePushed}`;
      if (built?.of !== of) built = { of, document: discoveryDocument(domain.issuer, registration, requirePushed) };
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
