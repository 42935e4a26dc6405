import type { UserRepository } from "../store/users.js";
import { OAuthError } from "./errors.js";
import type { LoginThrottle } from "./loginThrottle.js";
import type { Metrics } from "./metrics.js";
import { DUMMY_SECRET_HASH, verifySecret } from "./secrets.js";
import type { UserRecord } from "../shared/model.js";

/**
 * Checks user passwords for the password grant and the login form, without
 * revealing whether a user exists, under one brute-force policy.
 */
export class UserAuthenticator {
  constructor(
    private readonly users: UserRepository,
    private readonly throttle: LoginThrottle,
    private readonly metrics: Metrics,
  ) {}

  /** `clientAddress` is where the attempt came from, for the per-address limit. */
  async authenticate(username: string, password: string, clientAddress?: string): Promise<UserRecord> {
    const user = await this.throttle.attempt(username, clientAddress, async () => {
      const found = await this.users.findByName(username);
      // The costly step the throttle rations, counted where it runs.
      this.metrics.passwordChecked();
      const matches = await verifySecret(password, found?.passwordHash ?? DUMMY_SECRET_HASH);
      return found && matches && !found.disabled ? found : undefined;
    });
    if (!user) {
      this.metrics.loginFailure();
      throw new OAuthError("invalid_grant", "invalid username or password");
    }
    return user;
  }
}
