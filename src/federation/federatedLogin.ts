import { noAudit, userActor, type AuditTrail } from "../shared/audit.js";
import type { Logger } from "../shared/log.js";
import { echo, OAuthError } from "../oauth/errors.js";
import type { AccountLinker, LinkResult } from "./linking.js";
import type { LoginStates, Starter, TakenState } from "./loginStates.js";
import { checkProviderUrls, type ProviderAdmin } from "./providers.js";
import { effectiveProvider, providerTypeOf } from "./providerTypes/index.js";
import type { ProviderConfig, ProviderType } from "./providerTypes/providerType.js";
import { SecretBoxError } from "./secretBox.js";
import type { Metrics } from "../oauth/metrics.js";
import { MappingError, UpstreamError, type UpstreamClient, type UpstreamProfile } from "./upstream.js";
import { randomToken, sha256 } from "../oauth/secrets.js";
import type { ProviderRecord } from "../shared/model.js";

export interface BegunLogin {
  /** The provider's Auth URL with the spec's parameters. */
  authUrl: string;
  state: string;
}

/** A state that was taken, with its provider. */
export interface ReturnedLogin extends TakenState {
  providerRecord: ProviderRecord;
}

/**
 * The login round trip with a provider, shared by the login page and
 * FederationService: begin (state + Auth URL), take the state back, then
 * exchange the code, look the user up and link the account. What differs
 * between provider types is in their modules (providerTypes/).
 */
export class FederatedLogin {
  constructor(
    private readonly issuer: string,
    private readonly providers: ProviderAdmin,
    private readonly states: LoginStates,
    private readonly upstream: UpstreamClient,
    private readonly linker: AccountLinker,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    private readonly audit: AuditTrail = noAudit,
  ) {}

  /**
   * Where the provider sends the browser back, to register at the provider:
   * a callback of its own, so that an answer names the provider it is from
   * (RFC 9700 §4.4.2, mix-up); the spec's shared `{base_url}/callback` only
   * for a provider configured with `sharedCallback`.
   */
  redirectUriOf(provider: Pick<ProviderRecord, "name" | "sharedCallback">): string {
    return provider.sharedCallback ? `${this.issuer}/callback` : `${this.issuer}/callback/${provider.name}`;
  }

  get stateTtlSeconds(): number {
    return this.states.ttlSeconds;
  }

  /**
   * Start a sign-in with provider `name`, bound to `binding` (the browser's
   * CSRF token or an RPC caller's login secret) and, from the login page, to
   * the pending authorize request.
   */
  async begin(name: string, binding: string, authorizationRequestId?: string): Promise<BegunLogin> {
    const provider = effectiveProvider(await this.providers.get(name));
    const type = typeOf(provider);
    try {
      // Rows written before the https rule existed are held to it too.
      checkProviderUrls(provider);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      throw new OAuthError("server_error", `signing in with ${labelOf(provider)} is misconfigured (${err.description})`);
    }
    const config = await this.prepared(provider, type);
    // RFC 7636: the verifier stays here, with the state; the provider sees its S256 hash.
    const codeVerifier = provider.pkce || type.alwaysPkce ? randomToken() : undefined;
    const state = await this.states.create(provider.name, binding, authorizationRequestId, codeVerifier);
    const codeChallenge = codeVerifier && sha256(codeVerifier);
    const nonce = type.alwaysPkce && codeVerifier ? nonceOf(codeVerifier) : undefined;
    return { authUrl: type.authorizeUrl(config, this.redirectUriOf(provider), state, { codeChallenge, nonce }), state };
  }

  /**
   * Use up the state the provider sent back, if `starter` is the one who
   * began it and the answer came back to that sign-in's redirect URI:
   * `callback` is the provider named by the callback's path, undefined for
   * the shared `/callback`.
   */
  async takeState(state: string | undefined, starter: Starter, callback: string | undefined, clientAddress?: string): Promise<ReturnedLogin> {
    const taken = await this.states.take(state, starter);
    const providerRecord = await this.providers.get(taken.provider).catch((err: unknown) => {
      if (err instanceof OAuthError && err.code === "not_found") {
        throw new OAuthError("invalid_request", `the provider ${taken.provider} is no longer configured`);
      }
      throw err;
    });
    if (callback !== (providerRecord.sharedCallback ? undefined : providerRecord.name)) {
      // RFC 9700 §4.4.2: an answer at another provider's callback may carry that provider's code; it goes nowhere.
      // The state is used up: the sign-in it began was relayed, and starts again.
      const label = labelOf(providerRecord);
      this.logger.warn("federated sign-in refused: the answer came back to another callback", { provider: taken.provider, callback: echo(callback ?? "(shared)") });
      this.recordFailure(taken.provider, "wrong_callback", clientAddress);
      throw new OAuthError("access_denied", `signing in with ${label} failed: the answer came back to another callback than ${label}'s (another provider may have relayed it); start again`);
    }
    return { ...taken, providerRecord };
  }

  /** The provider's `error` response (RFC 6749 §4.1.2.1), as an error to show. */
  refused(login: ReturnedLogin, error: string, description: string | undefined, clientAddress?: string): OAuthError {
    const printable = (text: string, max: number) => text.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "").slice(0, max);
    const code = printable(error, 64) || "no reason given";
    const detail = description ? `: ${printable(description, 200)}` : "";
    this.logger.info("federated sign-in refused by the provider", { provider: login.provider, error: code });
    this.recordFailure(login.provider, "refused_by_provider", clientAddress);
    return new OAuthError("access_denied", `${labelOf(login.providerRecord)} did not sign you in (${code}${detail})`);
  }

  /**
   * Exchange the code, look the user up and link the account: the end of a
   * round trip. `clientAddress`, where the browser or RPC caller is, goes on
   * its audit event.
   */
  async complete(login: ReturnedLogin, code: string | undefined, iss?: string, clientAddress?: string): Promise<LinkResult> {
    const provider = login.providerRecord;
    let result: LinkResult;
    try {
      if (!code) throw new OAuthError("invalid_request", `${labelOf(provider)} sent no code back`);
      const profile = await this.lookUp(provider, code, login.codeVerifier, iss);
      result = await this.linker.link(provider, profile);
    } catch (err) {
      if (err instanceof OAuthError) this.recordFailure(provider.name, err.code, clientAddress);
      throw err;
    }
    this.logger.info("federated sign-in", { provider: provider.name, userId: result.user.id, created: result.created });
    this.audit.record({
      event: "federated_sign_in",
      outcome: "success",
      actor: userActor(result.user),
      clientAddress,
      userId: result.user.id,
      userName: result.user.name,
      details: { provider: provider.name, accountCreated: result.created },
    });
    return result;
  }

  /** A round trip that signed no one in: who it was is not known. */
  private recordFailure(provider: string, reason: string, clientAddress: string | undefined): void {
    this.audit.record({
      event: "federated_sign_in",
      outcome: "failure",
      actor: { kind: "user", id: "", name: "" },
      clientAddress,
      details: { provider, reason },
    });
  }

  /** The provider's calls; a failure is logged (reason only) and becomes an error to show. */
  private async lookUp(stored: ProviderRecord, code: string, codeVerifier: string | undefined, iss: string | undefined): Promise<UpstreamProfile> {
    const provider = effectiveProvider(stored);
    let clientSecret: string;
    try {
      clientSecret = this.providers.clientSecret(provider);
    } catch (err) {
      if (!(err instanceof SecretBoxError)) throw err;
      this.logger.error("federated sign-in impossible: client secret unreadable", { provider: provider.name, reason: err.message });
      throw new OAuthError("server_error", `signing in with ${labelOf(provider)} is misconfigured`);
    }
    const type = typeOf(provider);
    const config = await this.prepared(provider, type);
    if (type.checksCallbackIssuer && (iss !== undefined ? iss !== config.issuer : config.issParameterRequired)) {
      // RFC 9207: the answer came from another provider than the one this sign-in went to (a mix-up).
      this.logger.warn("federated sign-in: the callback's iss is not the provider's", { provider: provider.name });
      throw new OAuthError("access_denied", `signing in with ${labelOf(provider)} failed: the answer names another issuer than ${labelOf(provider)}`);
    }
    try {
      const nonce = type.alwaysPkce && codeVerifier ? nonceOf(codeVerifier) : undefined;
      const exchange = { clientSecret, code, redirectUri: this.redirectUriOf(provider), ...(codeVerifier ? { codeVerifier } : {}), ...(nonce ? { nonce } : {}) };
      const profile = await type.signIn(this.upstream, config, exchange);
      this.metrics.upstreamCall(provider.name, "ok");
      return profile;
    } catch (err) {
      throw this.failure(provider, err);
    }
  }

  /** The provider's config with what its type reads first (OIDC discovery); a failure becomes an error to show. */
  private async prepared(provider: ProviderRecord, type: ProviderType): Promise<ProviderConfig> {
    if (!type.prepare) return provider;
    try {
      return await type.prepare(this.upstream, provider);
    } catch (err) {
      throw this.failure(provider, err);
    }
  }

  /** A provider's failure, logged (reason only, never a token) and counted, as an error to show. */
  private failure(provider: ProviderRecord, err: unknown): unknown {
    if (err instanceof MappingError) {
      // The provider answered, but not what its mapping expects: a configuration to fix, not a moment to wait.
      this.metrics.upstreamCall(provider.name, "mapping_failed");
      this.logger.warn("federated sign-in: the provider's answer lacks a mapped field", { provider: provider.name, field: err.field, path: err.path, reason: err.reason });
      return new OAuthError("server_error", `signing in with ${labelOf(provider)} failed: ${labelOf(provider)} sent no usable ${err.field} (${err.path} ${err.reason})`, 502);
    }
    if (!(err instanceof UpstreamError)) return err;
    this.metrics.upstreamCall(provider.name, `${err.step}_failed`);
    this.logger.warn("federated sign-in failed at the provider", { provider: provider.name, step: err.step, reason: err.reason });
    if (err.step === "id_token") {
      // A verdict on the token the provider sent, not on where a call went: the check is named, and the sign-in refused.
      return new OAuthError("access_denied", `signing in with ${labelOf(provider)} failed: ${err.message}`, 502);
    }
    // Anyone can start a sign-in: one answer for every failed call, so that how a target failed (refused, silent,
    // an HTTP status, a body) maps nothing. The log has the step and the reason.
    return new OAuthError("temporarily_unavailable", `signing in with ${labelOf(provider)} failed: ${labelOf(provider)} could not be reached or its answer could not be used`, 502);
  }
}

/** The OIDC nonce of a round trip: derived from its secret verifier, so it needs no storage and cannot be guessed from the URL. */
const nonceOf = (codeVerifier: string) => sha256(`nonce:${codeVerifier}`);

const labelOf = (provider: ProviderRecord) => provider.displayName || provider.name;

/** The provider's type; its row was checked when written, so an unknown one is a database edited by hand. */
function typeOf(provider: ProviderRecord): ProviderType {
  const type = providerTypeOf(provider.type);
  if (!type) throw new OAuthError("server_error", `signing in with ${labelOf(provider)} is misconfigured: unknown type`);
  return type;
}
