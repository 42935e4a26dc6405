import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ApplicationAdminService, KeyAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import type { Domain } from "../domain/index.js";
import { applicationAdminService, keyAdminService, userAdminService } from "./admin.js";
import { discoveryService } from "./discovery.js";
import { federationService } from "./federation.js";
import { introspectionService } from "./introspection.js";
import { tokenService } from "./token.js";

/** A service description with its one implementation. */
export interface ServiceBinding<S extends DescService = DescService> {
  service: S;
  impl: ServiceImpl<S>;
}

const bind = <S extends DescService>(service: S, impl: ServiceImpl<S>): ServiceBinding =>
  ({ service, impl }) as unknown as ServiceBinding;

/** Every service of the contract, implemented once; both front doors serve these objects. */
export function serviceBindings(domain: Domain): ServiceBinding[] {
  return [
    bind(TokenService, tokenService(domain)),
    bind(IntrospectionService, introspectionService(domain)),
    bind(DiscoveryService, discoveryService(domain)),
    bind(ApplicationAdminService, applicationAdminService(domain)),
    bind(UserAdminService, userAdminService(domain)),
    bind(KeyAdminService, keyAdminService(domain)),
    bind(FederationService, federationService(domain)),
  ];
}
