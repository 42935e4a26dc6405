import type { ServiceImpl } from "@connectrpc/connect";
import {
  ApplicationAdminService,
  KeyAdminService,
  SessionAdminService,
  UserAdminService,
  type ApplicationInput as ApplicationInputMessage,
  type UserInput as UserInputMessage,
} from "../../gen/identity/v1/admin_pb.js";
import { parseApplicationInput } from "../accounts/applications.js";
import { parseUserInput } from "../accounts/users.js";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import { signingAlgOf } from "../oauth/keys.js";
import { epochSecondsOf } from "./adminAuth.js";
import { everyMethod } from "./guards.js";
import type { ApplicationRecord, SigningKeyRecord, UserFactorRecord, UserRecord } from "../shared/model.js";
import { adminCaller } from "../shared/audit.js";

function applicationOut(app: ApplicationRecord) {
  // The sealed secret of a client_secret_jwt application is as secret as the secret itself.
  const { clientSecretHash: _secret, clientSecretSealed: _sealed, id: _id, registration, createdAt, updatedAt, ...rest } = app;
  return { ...rest, registered: registration !== undefined, createdTime: epochSecondsOf(createdAt), updatedTime: epochSecondsOf(updatedAt) };
}

function userOut(user: UserRecord) {
  const { passwordHash: _hash, properties: _props, createdAt, updatedAt, ...rest } = user;
  return { ...rest, createdTime: epochSecondsOf(createdAt), updatedTime: epochSecondsOf(updatedAt) };
}

function keyOut(key: SigningKeyRecord, signingKids: Set<string>) {
  return {
    kid: key.kid,
    alg: key.alg,
    createdTime: epochSecondsOf(key.createdAt),
    activeFrom: epochSecondsOf(key.activeFrom),
    retiredTime: epochSecondsOf(key.retiredAt ?? 0),
    signing: signingKids.has(key.kid),
  };
}

/** Proto input to the plain object the shared validation reads; unset stays unset. */
function applicationInput(input: ApplicationInputMessage | undefined) {
  if (!input) throw new OAuthError("invalid_request", "application: is required");
  const list = (values: string[]) => (values.length > 0 || input.replaceLists ? values : undefined);
  return parseApplicationInput({
    name: input.name,
    clientId: input.clientId,
    clientSecret: input.clientSecret,
    redirectUris: list(input.redirectUris),
    grantTypes: list(input.grantTypes),
    expireInHours: input.expireInHours,
    refreshExpireInHours: input.refreshExpireInHours,
    providers: list(input.providers),
    allowedOrigins: list(input.allowedOrigins),
    tokenFormat: input.tokenFormat,
    signingAlg: input.signingAlg,
    accessTokenStrategy: input.accessTokenStrategy,
    publicClient: input.publicClient,
    mfa: input.mfa,
    signup: input.signup,
    tokenEndpointAuthMethod: input.tokenEndpointAuthMethod,
    jwks: input.jwks,
    jwksUri: input.jwksUri,
    exchangeAudiences: list(input.exchangeAudiences),
    allowImpersonation: input.allowImpersonation,
    consentRequired: input.consentRequired,
    requirePushedAuthorizationRequests: input.requirePushedAuthorizationRequests,
    dpopBoundAccessTokens: input.dpopBoundAccessTokens,
    backchannelLogoutUri: input.backchannelLogoutUri,
    backchannelLogoutSessionRequired: input.backchannelLogoutSessionRequired,
    allowPrivateBackchannelLogoutUri: input.allowPrivateBackchannelLogoutUri,
    profile: input.profile,
  });
}

function userInput(input: UserInputMessage | undefined) {
  if (!input) throw new OAuthError("invalid_request", "user: is required");
  const { $typeName: _t, $unknown: _u, ...fields } = input;
  return parseUserInput(Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)));
}

// Every admin call needs the admin token or an admin user's identity:admin token: the guard runs before each method (guards.ts).
export const applicationAdminGuards = everyMethod(ApplicationAdminService, ["noStore", "admin"]);
export const userAdminGuards = everyMethod(UserAdminService, ["noStore", "admin"]);
export const keyAdminGuards = everyMethod(KeyAdminService, ["noStore", "admin"]);
export const sessionAdminGuards = everyMethod(SessionAdminService, ["noStore", "admin"]);

export function applicationAdminService(domain: Domain): ServiceImpl<typeof ApplicationAdminService> {
  const admin = domain.applicationAdmin;
  return {
    async createApplication(req) {
      const saved = await admin.create(applicationInput(req.application));
      return { application: applicationOut(saved.app), clientSecret: saved.clientSecret };
    },
    async getApplication(req) {
      return { application: applicationOut(await admin.get(req.name)) };
    },
    async listApplications() {
      return { applications: (await admin.list()).map(applicationOut) };
    },
    async updateApplication(req) {
      const saved = await admin.update(applicationInput(req.application));
      return { application: applicationOut(saved.app), clientSecret: saved.clientSecret };
    },
    async deleteApplication(req) {
      await admin.delete(req.name);
      return {};
    },
    async rotateApplicationSecret(req) {
      const saved = await admin.rotateSecret(req.name);
      return { application: applicationOut(saved.app), clientSecret: saved.clientSecret };
    },
  };
}

export function userAdminService(domain: Domain): ServiceImpl<typeof UserAdminService> {
  const admin = domain.userAdmin;
  return {
    async createUser(req) {
      return { user: userOut(await admin.create(userInput(req.user))) };
    },
    async getUser(req) {
      return { user: userOut(await admin.get(req.name)) };
    },
    async listUsers(req) {
      const page = await domain.userPage({ search: req.search, pageSize: req.pageSize, pageToken: req.pageToken });
      return { users: page.users.map(userOut), nextPageToken: page.nextPageToken, totalSize: page.totalSize };
    },
    async updateUser(req) {
      return { user: userOut(await admin.update(userInput(req.user))) };
    },
    async deleteUser(req) {
      await admin.delete(req.name);
      return {};
    },
    async listUserFactors(req) {
      const user = await admin.get(req.user);
      const factors = await domain.secondFactors.list(user.id);
      return { factors: factors.map(factorOut), recoveryCodesLeft: await domain.secondFactors.recoveryCodesLeft(user.id) };
    },
    async removeUserFactor(req) {
      const user = await admin.get(req.user);
      if (!(await domain.secondFactors.remove(user, req.factorId, adminCaller.current().actor))) {
        throw new OAuthError("not_found", "this user has no factor with that id");
      }
      return {};
    },
    async sendVerificationEmail(req) {
      await domain.selfService.emailVerification.send(req.name);
      return {};
    },
  };
}

/** A factor as the admin (and its user, AccountService) sees it: never its secret or key. */
export function factorOut(factor: UserFactorRecord) {
  return {
    id: factor.id,
    type: factor.type,
    name: factor.name,
    createdTime: epochSecondsOf(factor.createdAt),
    lastUsedTime: epochSecondsOf(factor.lastUsedAt ?? 0),
  };
}

export function keyAdminService(domain: Domain): ServiceImpl<typeof KeyAdminService> {
  const keys = domain.keys;
  return {
    async listKeys() {
      const signing = await keys.signingKids();
      return { keys: (await keys.list()).map((k) => keyOut(k, signing)) };
    },
    async rotateKey(req) {
      const record = await keys.rotate(undefined, signingAlgOf(req.alg));
      return { key: keyOut(record, await keys.signingKids()) };
    },
    async exportKey(req) {
      const { alg: _alg, ...exported } = await keys.export(req.kid || undefined, signingAlgOf(req.alg));
      return exported;
    },
  };
}

export function sessionAdminService(domain: Domain): ServiceImpl<typeof SessionAdminService> {
  const sessions = domain.userSessions;
  return {
    async listUserSessions(req) {
      const listed = await sessions.list(req.user);
      return {
        sessions: listed.sessions.map((s) => ({
          id: s.id,
          createdTime: epochSecondsOf(s.createdAt),
          authTime: BigInt(s.authTime),
          expireTime: epochSecondsOf(s.expiresAt),
        })),
        refreshTokens: listed.refreshTokens.map((t) => ({
          id: t.familyId,
          clientId: t.clientId,
          application: t.applicationName ?? "",
          scope: t.scope,
          authTime: BigInt(t.authTime),
          issuedTime: epochSecondsOf(t.issuedAt),
          expireTime: epochSecondsOf(t.expiresAt),
        })),
      };
    },
    async revokeSession(req) {
      await sessions.revokeSession(req.user, req.sessionId);
      return {};
    },
    async revokeRefreshToken(req) {
      await sessions.revokeRefreshToken(req.user, req.refreshTokenId);
      return {};
    },
    async revokeAllUserSessions(req) {
      const ended = await sessions.revokeAll(req.user);
      return { sessionsRevoked: ended.sessions, refreshTokensRevoked: ended.refreshTokens };
    },
  };
}
