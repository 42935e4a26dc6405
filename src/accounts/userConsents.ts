import { noAudit, recordAdminAction, userActor, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { echo, OAuthError } from "../oauth/errors.js";
import type { ApplicationRepository } from "../store/applications.js";
import type { ConsentRecord, ConsentRepository } from "../store/consents.js";
import type { ResourceRepository } from "../store/resources.js";
import type { UserRepository } from "../store/users.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** One application a user allowed, as the account page and the console show it. */
export interface ConsentView {
  clientId: string;
  /** The name the consent page showed: a registered client's client_name, or the application's name. */
  application: string;
  /** Whether the application registered itself (RFC 7591). */
  registered: boolean;
  scopes: string[];
  /** Each scope with the one line its resource server gives it ("" for the service's own scopes, which the pages word). */
  described: { name: string; description: string }[];
  /** Each resource URI allowed, with its resource server's name ("" for one deleted since). */
  resources: { uri: string; name: string }[];
  grantedAt: number;
}

/** The name the consent page shows for an application (web/consent.ts). */
export function applicationDisplayName(app: ApplicationRecord): string {
  const name = app.registration?.metadata.client_name;
  return typeof name === "string" && name !== "" ? name : app.name;
}

/**
 * What users allowed applications (issue 43 §2), listed and revoked by the
 * user themselves (/account/consents) or by an administrator
 * (ConsentAdminService). Revoking forgets the consent, so the next request
 * asks again, and ends that application's refresh and access tokens for the
 * user, in one transaction (store/consents.ts).
 */
export class UserConsents {
  constructor(
    private readonly repos: { consents: ConsentRepository; users: UserRepository; applications: ApplicationRepository; resources: ResourceRepository },
    private readonly clock: Clock,
    private readonly audit: AuditTrail = noAudit,
  ) {}

  /** The user's consents, newest first. */
  async of(user: Pick<UserRecord, "id">): Promise<ConsentView[]> {
    const consents = await this.repos.consents.listForUser(user.id);
    const uris = [...new Set(consents.flatMap((c) => c.resources))];
    const resources = uris.length ? await this.repos.resources.findByUris(uris) : [];
    const names = new Map(resources.map((r) => [r.uri, r.name]));
    const descriptions = new Map(resources.flatMap((r) => r.scopes.map((s) => [s.name, s.description] as const)));
    const views = await Promise.all(consents.map(async (c) => this.view(c, await this.repos.applications.findByClientId(c.clientId), names, descriptions)));
    return views.flatMap((v) => (v ? [v] : []));
  }

  /** An administrator's view: the consents of the user named. */
  async list(userName: string): Promise<{ user: UserRecord; consents: ConsentView[] }> {
    const user = await this.user(userName);
    return { user, consents: await this.of(user) };
  }

  /** The user withdraws their own consent to `clientId`. */
  async revokeOwn(user: UserRecord, clientId: string): Promise<{ application: string; refreshTokens: number }> {
    const revoked = await this.revoke(user, clientId);
    this.audit.record({ event: "consent_revoked", outcome: "success", actor: userActor(user), clientId, userId: user.id, userName: user.name, details: { refreshTokens: revoked.refreshTokens } });
    return revoked;
  }

  /** An administrator revokes the consent the user named gave `clientId`. */
  async revokeFor(userName: string, clientId: string): Promise<{ user: UserRecord; refreshTokens: number }> {
    const user = await this.user(userName);
    const revoked = await this.revoke(user, clientId);
    recordAdminAction(this.audit, "consent_revoked", { name: user.name, userId: user.id, userName: user.name, clientId }, { refreshTokens: revoked.refreshTokens });
    return { user, refreshTokens: revoked.refreshTokens };
  }

  private async revoke(user: UserRecord, clientId: string): Promise<{ application: string; refreshTokens: number }> {
    const app = clientId ? await this.repos.applications.findByClientId(clientId) : undefined;
    const revoked = clientId ? await this.repos.consents.revoke(user.id, clientId, this.clock.now()) : undefined;
    if (!revoked) throw new OAuthError("not_found", `${echo(user.name)} has not allowed ${echo(clientId)}`);
    return { application: app ? applicationDisplayName(app) : clientId, refreshTokens: revoked.refreshTokens };
  }

  private view(
    c: ConsentRecord,
    app: ApplicationRecord | undefined,
    resources: ReadonlyMap<string, string>,
    descriptions: ReadonlyMap<string, string>,
  ): ConsentView | undefined {
    // A consent goes with its application (ON DELETE CASCADE); one read as it went is left out.
    if (!app) return undefined;
    return {
      clientId: c.clientId,
      application: applicationDisplayName(app),
      registered: app.registration !== undefined,
      scopes: c.scopes,
      described: c.scopes.map((name) => ({ name, description: descriptions.get(name) ?? "" })),
      resources: c.resources.map((uri) => ({ uri, name: resources.get(uri) ?? "" })),
      grantedAt: c.grantedAt,
    };
  }

  private async user(name: string): Promise<UserRecord> {
    const user = name ? await this.repos.users.findByName(name) : undefined;
    if (!user) throw new OAuthError("not_found", `no user named ${echo(name)}`);
    return user;
  }
}
