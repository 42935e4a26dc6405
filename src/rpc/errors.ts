import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { FieldViolationSchema } from "../../gen/identity/v1/admin_pb.js";
import { OAuthErrorDetailSchema } from "../../gen/identity/v1/token_pb.js";
import { InvalidInputError } from "../accounts/validation.js";
import { asOAuthError, OAuthError, wellFormed, worthLogging, type OAuthErrorCode } from "../oauth/errors.js";
import { bearerChallenge, dpopChallenge } from "../http/answers.js";
import { annotateRequest, type LogUnexpected, type RequestContext } from "../http/requestContext.js";
import { REQUEST_CONTEXT } from "./headers.js";

const CONNECT_CODES: Partial<Record<OAuthErrorCode, Code>> = {
  invalid_client: Code.Unauthenticated,
  invalid_token: Code.Unauthenticated,
  login_required: Code.Unauthenticated,
  // RFC 9470 §3: a 401 over HTTP; the caller signs in again.
  insufficient_user_authentication: Code.Unauthenticated,
  unauthorized_client: Code.PermissionDenied,
  access_denied: Code.PermissionDenied,
  insufficient_scope: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  temporarily_unavailable: Code.Unavailable,
  server_error: Code.Internal,
};

/**
 * The RPC front door's one mapping of domain errors: a Connect code, the
 * description as message, and the OAuth code both as an `x-oauth-error`
 * header and as a typed `OAuthErrorDetail`; refused input also carries one
 * `FieldViolation` for each bad field, so a form can mark every one. An
 * unreachable database becomes Unavailable. Anything else becomes a bare
 * Internal error, so no stack or internal message reaches a caller.
 */
export function toConnectError(failure: unknown, log: LogUnexpected, context?: RequestContext): ConnectError {
  if (failure instanceof ConnectError) return failure;
  const err = asOAuthError(failure);
  if (worthLogging(failure)) log(failure, context);
  if (err) {
    annotateRequest(context, { oauthError: err.code });
    // A description quoting the caller's text may hold half a surrogate pair, which a gRPC trailer cannot.
    const description = wellFormed(err.description);
    const oauthDetail = { desc: OAuthErrorDetailSchema, value: create(OAuthErrorDetailSchema, { error: err.code, errorDescription: description }) };
    const fieldDetails =
      err instanceof InvalidInputError
        ? err.problems.map((p) => ({ desc: FieldViolationSchema, value: create(FieldViolationSchema, { field: p.field, description: wellFormed(p.problem) }) }))
        : [];
    const code = err.answer?.challenge ? Code.Unauthenticated : (CONNECT_CODES[err.code] ?? Code.InvalidArgument);
    return new ConnectError(description, code, errorMetadata(err), [oauthDetail, ...fieldDetails]);
  }
  return new ConnectError("internal error", Code.Internal);
}

/** The `x-oauth-error` header, a DPoP refusal's challenge and nonce (RFC 9449 §7.1, §8), a step-up's challenge (RFC 9470 §3). */
function errorMetadata(err: OAuthError): Record<string, string> {
  const metadata: Record<string, string> = { "x-oauth-error": err.code };
  const shown = () => new OAuthError(err.code, wellFormed(err.description), err.status, err.answer);
  if (err.answer?.challenge === "DPoP") metadata["www-authenticate"] = dpopChallenge(shown());
  else if (err.code === "insufficient_user_authentication") metadata["www-authenticate"] = bearerChallenge(shown());
  if (err.answer?.dpopNonce) metadata["dpop-nonce"] = err.answer.dpopNonce;
  return metadata;
}

export function oauthErrorInterceptor(log: LogUnexpected): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      throw toConnectError(err, log, req.contextValues.get(REQUEST_CONTEXT));
    }
  };
}
