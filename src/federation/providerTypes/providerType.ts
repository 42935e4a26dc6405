import type { ProviderRecord } from "../../shared/model.js";
import type { UpstreamClient, UpstreamProfile } from "../upstream.js";
import type { Preset } from "./presets.js";

/** What a provider type reads of a provider's configuration. */
export type ProviderConfig = Pick<
  ProviderRecord,
  "name" | "clientId" | "authUrl" | "scope" | "tokenUrl" | "userInfoUrl" | "userMapping" | "tokenAuthMethod" | "pkce" | "emailsUrl"
>;

/** A configurable string field of a provider. */
export type ProviderField = "clientId" | "clientSecret" | "authUrl" | "scope" | "tokenUrl" | "userInfoUrl" | "favicon" | "emailsUrl";

/** One sign-in's code, to exchange at the provider. */
export interface CodeExchange {
  /** The client secret in clear. */
  clientSecret: string;
  code: string;
  /** Our callback, as sent in the authorize URL. */
  redirectUri: string;
  /** The PKCE code_verifier, when the authorize URL carried its challenge. */
  codeVerifier?: string;
}

/** What the authorize URL carries beyond the spec's parameters. */
export interface AuthorizeExtras {
  /** PKCE S256 code_challenge. */
  codeChallenge?: string;
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
  /** The provider's login address for one sign-in. */
  authorizeUrl(config: ProviderConfig, redirectUri: string, state: string, extras?: AuthorizeExtras): string;
  /**
   * Exchange the code and look the user up, over `upstream`'s bounded calls.
   * Fails with UpstreamError or MappingError; the provider's tokens end here, never stored.
   */
  signIn(upstream: UpstreamClient, config: ProviderConfig, exchange: CodeExchange): Promise<UpstreamProfile>;
}
