import type { ProviderRecord } from "../../shared/model.js";
import type { UpstreamClient, UpstreamProfile } from "../upstream.js";
import type { Preset } from "./presets.js";

/** What a provider type reads of a provider's configuration. */
export type ProviderConfig = Pick<
  ProviderRecord,
  "name" | "clientId" | "authUrl" | "scope" | "tokenUrl" | "userInfoUrl" | "userMapping" | "tokenAuthMethod" | "pkce" | "emailsUrl" | "issuer" | "allowInsecureUrls"
> & {
  /** OIDC: the provider said (RFC 9207) that its callbacks carry `iss`. */
  issParameterRequired?: boolean;
  /** OIDC: the token URL came from discovery, not the operator, and may reach only public addresses (urlRule.ts). */
  tokenUrlPublicOnly?: boolean;
};

/** A configurable string field of a provider. */
export type ProviderField = "clientId" | "clientSecret" | "authUrl" | "scope" | "tokenUrl" | "userInfoUrl" | "favicon" | "emailsUrl" | "issuer";

/** One sign-in's code, to exchange at the provider. */
export interface CodeExchange {
  /** The client secret in clear. */
  clientSecret: string;
  code: string;
  /** Our callback, as sent in the authorize URL. */
  redirectUri: string;
  /** The PKCE code_verifier, when the authorize URL carried its challenge. */
  codeVerifier?: string;
  /** The nonce the authorize URL carried. */
  nonce?: string;
}

/** What the authorize URL carries beyond the spec's parameters. */
export interface AuthorizeExtras {
  /** PKCE S256 code_challenge. */
  codeChallenge?: string;
  /** OIDC nonce. */
  nonce?: string;
}

/**
 * One kind of upstream provider (a provider's `type`): how to send the
 * browser to it, and how to turn the code it sends back into a profile.
 * Everything else about a sign-in (state, secrets, linking, logs and
 * metrics) is the same for every type (federatedLogin.ts).
 */
export interface ProviderType {
  /** The fields a provider of this type must set itself (name and type aside). */
  required: readonly ProviderField[];
  /** What the type fills in for the fields a provider leaves empty. */
  preset?: Preset;
  /** Whether every round trip sends PKCE and a nonce, whatever the provider's `pkce` says. */
  alwaysPkce?: boolean;
  /** Whether the callback's `iss` parameter (RFC 9207) must be the provider's issuer when present. */
  checksCallbackIssuer?: boolean;
  /** What must be read before a round trip (OIDC: discovery); the config with it filled in. */
  prepare?(upstream: UpstreamClient, config: ProviderConfig): Promise<ProviderConfig>;
  /** The provider's login address for one sign-in. */
  authorizeUrl(config: ProviderConfig, redirectUri: string, state: string, extras?: AuthorizeExtras): string;
  /**
   * Exchange the code and look the user up, over `upstream`'s bounded calls.
   * Fails with UpstreamError or MappingError; the provider's tokens end here, never stored.
   */
  signIn(upstream: UpstreamClient, config: ProviderConfig, exchange: CodeExchange): Promise<UpstreamProfile>;
}
