import type { Domain } from "../domain/index.js";
import { randomToken } from "../oauth/secrets.js";
import { GRANT_TYPES } from "../oauth/grants/index.js";

export interface DemoCredentials {
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
  /** The administrator a first start on a terminal makes for the console; absent otherwise. */
  admin?: { username: string; password: string };
}

/** The administrator's name, in the seed and in the command that makes one by hand. */
export const FIRST_ADMIN_NAME = "admin";

export interface SeedOptions {
  /**
   * Also make an administrator, whose password is printed once: only when
   * standard output is a terminal, so that no admin password reaches a log
   * collector (a container's or a service manager's output).
   */
  admin: boolean;
}

/**
 * On a brand-new database (no applications, no users) create a demo
 * application and user so `npm start` is immediately usable, and, if asked,
 * an administrator who can sign in to the console at once. Returns their
 * credentials for printing once; later starts get undefined.
 */
export async function seedDemo(domain: Domain, options: SeedOptions = { admin: false }): Promise<DemoCredentials | undefined> {
  const [apps, users] = await Promise.all([domain.applicationAdmin.list(), domain.userAdmin.list()]);
  if (apps.length > 0 || users.length > 0) return undefined;
  const password = randomToken(12);
  await domain.userAdmin.create({ name: "demo", password, displayName: "Demo User", email: "demo@example.com" });
  const { app, clientSecret } = await domain.applicationAdmin.create({
    name: "demo",
    redirectUris: ["http://127.0.0.1:9999/callback"],
    // The demo application may try every grant there is.
    grantTypes: [...GRANT_TYPES],
    refreshExpireInHours: 24,
  });
  const demo: DemoCredentials = { clientId: app.clientId, clientSecret: clientSecret!, username: "demo", password };
  if (!options.admin) return demo;
  const adminPassword = randomToken(18);
  await domain.userAdmin.create({ name: FIRST_ADMIN_NAME, password: adminPassword, displayName: "Administrator", isAdmin: true });
  return { ...demo, admin: { username: FIRST_ADMIN_NAME, password: adminPassword } };
}
