import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ApplicationAdminService, KeyAdminService, SessionAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import { PushedAuthorizationService } from "../../gen/identity/v1/authorize_pb.js";
import { DiscoveryService } from "../../gen/identity/v1/discovery_pb.js";
import { EventAdminService } from "../../gen/identity/v1/events_pb.js";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { ResourceAdminService } from "../../gen/identity/v1/resources_pb.js";
import { ConsentAdminService } from "../../gen/identity/v1/consents_pb.js";
import { ApplicationChoicesService } from "../../gen/identity/v1/choices_pb.js";
import { SettingsAdminService } from "../../gen/identity/v1/settings_pb.js";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import { AccountService } from "../../gen/identity/v1/account_pb.js";
import type { Domain } from "../domain/index.js";
import {
  applicationAdminGuards,
  applicationAdminService,
  keyAdminGuards,
  keyAdminService,
  sessionAdminGuards,
  sessionAdminService,
  userAdminGuards,
  userAdminService,
} from "./admin.js";
import { asAdminCalls } from "./auditedCalls.js";
import { pushedAuthorizationGuards, pushedAuthorizationService } from "./authorize.js";
import { discoveryGuards, discoveryService } from "./discovery.js";
import { eventAdminGuards, eventAdminService } from "./events.js";
import { federationGuards, federationService } from "./federation.js";
import { withGuards, type GuardName, type MethodGuards } from "./guards.js";
import { introspectionGuards, introspectionService } from "./introspection.js";
import { resourceAdminGuards, resourceAdminService } from "./resources.js";
import { consentAdminGuards, consentAdminService } from "./consents.js";
import { applicationChoicesGuards, applicationChoicesService } from "./choices.js";
import { settingsAdminGuards, settingsAdminService } from "./settings.js";
import { tokenGuards, tokenService } from "./token.js";
import { accountGuards, accountService } from "./ownAccount.js";

/** A service description with its one implementation, its guards already applied. */
export interface ServiceBinding<S extends DescService = DescService> {
  service: S;
  impl: ServiceImpl<S>;
  /** Each method's guards (its local name -> guard names), as its service file declares them. */
  guards: Readonly<Record<string, readonly GuardName[]>>;
}

/** Every service of the contract, implemented once; every front door serves these objects. */
export function serviceBindings(domain: Domain): ServiceBinding[] {
  const bind = <S extends DescService>(service: S, impl: ServiceImpl<S>, guards: MethodGuards<S>): ServiceBinding =>
    ({ service, impl: withGuards(domain, service, asAdminCalls(service, impl, guards), guards), guards }) as unknown as ServiceBinding;
  return [
    bind(TokenService, tokenService(domain), tokenGuards),
    bind(PushedAuthorizationService, pushedAuthorizationService(domain), pushedAuthorizationGuards),
    bind(IntrospectionService, introspectionService(domain), introspectionGuards),
    bind(DiscoveryService, discoveryService(domain), discoveryGuards),
    bind(ApplicationAdminService, applicationAdminService(domain), applicationAdminGuards),
    bind(UserAdminService, userAdminService(domain), userAdminGuards),
    bind(KeyAdminService, keyAdminService(domain), keyAdminGuards),
    bind(SessionAdminService, sessionAdminService(domain), sessionAdminGuards),
    bind(FederationService, federationService(domain), federationGuards),
    bind(EventAdminService, eventAdminService(domain), eventAdminGuards),
    bind(SettingsAdminService, settingsAdminService(domain), settingsAdminGuards),
    bind(ResourceAdminService, resourceAdminService(domain), resourceAdminGuards),
    bind(ConsentAdminService, consentAdminService(domain), consentAdminGuards),
    bind(ApplicationChoicesService, applicationChoicesService(), applicationChoicesGuards),
    bind(AccountService, accountService(domain), accountGuards),
  ];
}
