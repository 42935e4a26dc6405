import type { Domain } from "../domain/index.js";
import { randomToken } from "../oauth/secrets.js";
import { GRANT_TYPES } from "../oauth/grants/index.js";

export interface DemoCredentials {
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
}

/**
 * On a brand-new database (no applications, no users) create a demo
 * application and user so `npm start` is immediately usable. Returns their
 * credentials for printing once; later starts get undefined.
 */
export async function seedDemo(domain: Domain): Promise<DemoCredentials | undefined> {
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
  return { clientId: app.clientId, clientSecret: clientSecret!, username: "demo", password };
}
