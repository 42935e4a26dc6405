import type { ServiceImpl } from "@connectrpc/connect";
import { ApplicationChoicesService } from "../../gen/identity/v1/choices_pb.js";
import { APPLICATION_CHOICES } from "../accounts/applications.js";
import { everyMethod } from "./guards.js";

export const applicationChoicesGuards = everyMethod(ApplicationChoicesService, ["admin"]);

/** The values of an application's choice fields, from the tables validation reads (issue 42 §2). */
export function applicationChoicesService(): ServiceImpl<typeof ApplicationChoicesService> {
  const answer = {
    grantTypes: APPLICATION_CHOICES.grantTypes.map((g) => ({ ...g })),
    tokenEndpointAuthMethods: [...APPLICATION_CHOICES.tokenEndpointAuthMethods],
    tokenFormats: [...APPLICATION_CHOICES.tokenFormats],
    signingAlgs: [...APPLICATION_CHOICES.signingAlgs],
    accessTokenStrategies: [...APPLICATION_CHOICES.accessTokenStrategies],
    mfaPolicies: [...APPLICATION_CHOICES.mfaPolicies],
  };
  return {
    getApplicationChoices() {
      return answer;
    },
  };
}
