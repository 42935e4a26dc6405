import type { Clock } from "../shared/clock.js";
import { OAuthError } from "../oauth/errors.js";
import { constantTimeEqual, randomToken, sha256 } from "../oauth/secrets.js";
import type { FederationStateRepository } from "../store/federationStates.js";

/** How long a round trip to the provider may take. */
export const STATE_TTL_SECONDS = 600;

/** Who started a sign-in and presents its state again. */
export type Starter =
  /** A browser on the login page: bound to its CSRF cookie and a pending authorize request. */
  | { kind: "browser"; csrfToken: string | undefined }
  /** A FederationService caller: bound to the login secret BeginLogin returned. */
  | { kind: "rpc"; loginSecret: string | undefined };

/** A state that was presented by its starter, and is now used up. */
export interface TakenState {
  provider: string;
  /** The pending authorize request a browser sign-in finishes. */
  authorizationRequestId?: string;
  /** The PKCE code_verifier kept for the token exchange. */
  codeVerifier?: string;
}

const bindingOf = (starter: Starter) => (starter.kind === "browser" ? starter.csrfToken : starter.loginSecret);

const refused = (description: string) => new OAuthError("invalid_request", description);

/**
 * The `state` of the round trip to a provider (RFC 6749 §10.12). It is
 * random (256 bits), stored only as a hash, short-lived, used at most once,
 * and bound to whoever started the sign-in: the browser's CSRF cookie, or
 * the login secret of an RPC caller. A state sent back by anyone else is
 * refused and stays usable for its starter.
 */
export class LoginStates {
  constructor(
    private readonly repo: FederationStateRepository,
    private readonly clock: Clock,
    readonly ttlSeconds = STATE_TTL_SECONDS,
  ) {}

  /** A new state for a sign-in with `provider`, bound to `binding` and, from a browser, to its authorize request. */
  async create(provider: string, binding: string, authorizationRequestId?: string, codeVerifier?: string): Promise<string> {
    const state = randomToken();
    const now = this.clock.now();
    await this.repo.insert({
      stateHash: sha256(state),
      provider,
      bindingHash: sha256(binding),
      authorizationRequestId: authorizationRequestId ?? null,
      ...(codeVerifier ? { codeVerifier } : {}),
      createdAt: now,
      expiresAt: now + this.ttlSeconds * 1000,
    });
    return state;
  }

  /** Use up a state presented by `starter`; throws an error to show when it may not be used. */
  async take(state: string | undefined, starter: Starter): Promise<TakenState> {
    if (!state) throw refused("the provider sent no state back");
    const record = state.length <= 200 ? await this.repo.findByHash(sha256(state)) : undefined;
    if (!record) throw refused("this sign-in is unknown or was already completed; start again");
    if (record.expiresAt <= this.clock.now()) throw refused("this sign-in took too long and has expired; start again");
    const startedInBrowser = record.authorizationRequestId !== null;
    if (starter.kind === "browser" && !startedInBrowser) {
      throw refused("this sign-in was started by an application; return to it to finish");
    }
    const binding = bindingOf(starter);
    if (starter.kind === "rpc" && startedInBrowser) throw refused("this state belongs to a sign-in in a browser");
    if (!binding || !constantTimeEqual(record.bindingHash, sha256(binding))) {
      throw refused(starter.kind === "browser" ? "this sign-in was started in another browser" : "login_secret does not match this state");
    }
    if (!(await this.repo.take(record.stateHash))) throw refused("this sign-in is unknown or was already completed; start again");
    return {
      provider: record.provider,
      authorizationRequestId: record.authorizationRequestId ?? undefined,
      ...(record.codeVerifier ? { codeVerifier: record.codeVerifier } : {}),
    };
  }
}
