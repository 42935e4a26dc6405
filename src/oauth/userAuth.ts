import type { UserRecord, UserRepository } from "../store/users.js";
import { OAuthError } from "./errors.js";
import { noMetrics, type Metrics } from "./metrics.js";
import { DUMMY_SECRET_HASH, verifySecret } from "./secrets.js";

/** Checks user passwords without revealing whether a user exists. */
export class UserAuthenticator {
  constructor(
    private readonly users: UserRepository,
    private readonly metrics: Metrics = noMetrics,
  ) {}

  async authenticate(username: string, password: string): Promise<UserRecord> {
    const user = await this.users.findByName(username);
    const matches = await verifySecret(password, user?.passwordHash ?? DUMMY_SECRET_HASH);
    if (!user || !matches || user.disabled) {
      this.metrics.loginFailure();
      throw new OAuthError("invalid_grant", "invalid username or password");
    }
    return user;
  }
}
