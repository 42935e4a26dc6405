import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { FieldViolationSchema } from "../../gen/identity/v1/admin_pb.js";

/**
 * The one way the console reaches the service: the generated Protobuf
 * clients over Connect, on this page's origin, carrying the access token.
 */
export function createClients(accessToken: () => string, onSignedOut: () => void) {
  const bearer: Interceptor = (next) => async (req) => {
    req.header.set("authorization", `Bearer ${accessToken()}`);
    try {
      return await next(req);
    } catch (err) {
      // An expired or revoked token: sign in again rather than show every page failing.
      if (ConnectError.from(err).code === Code.Unauthenticated) onSignedOut();
      throw err;
    }
  };
  const transport = createConnectTransport({ baseUrl: location.origin, interceptors: [bearer] });
  return <S extends DescService>(service: S): Client<S> => createClient(service, transport);
}

export type ClientOf = ReturnType<typeof createClients>;

/** A failed call, as the console shows it: its message, and the form fields it names, if any. */
export interface Failure {
  code: Code;
  message: string;
  /** What is wrong with each field named, by the field's JSON name; empty when the failure is about no field. */
  fields: FieldFailure[];
}

export interface FieldFailure {
  field: string;
  message: string;
}

/**
 * Invalid input carries one FieldViolation detail for each bad field, naming
 * it by its JSON name (`authUrl`, `userMapping.email`; docs/admin.md): that
 * field is where the console shows it.
 */
export function failureOf(err: unknown): Failure {
  const error = ConnectError.from(err);
  const fields = error
    .findDetails(FieldViolationSchema)
    .filter((v) => v.field)
    .map((v) => ({ field: v.field, message: v.description || error.rawMessage }));
  return { code: error.code, message: error.rawMessage || "The call failed.", fields };
}

/** Whether the caller's token no longer works (expired, revoked): time to sign in again. */
export const isSignedOut = (failure: Failure) => failure.code === Code.Unauthenticated;
/** Whether the signed-in user is not an administrator. */
export const isRefused = (failure: Failure) => failure.code === Code.PermissionDenied;
