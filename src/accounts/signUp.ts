import { randomUUID } from "node:crypto";
import { userActor } from "../shared/audit.js";
import type { UserRecord } from "../shared/model.js";
import { OAuthError } from "../oauth/errors.js";
import { hashSecret } from "../oauth/secrets.js";
import { ConflictError } from "../store/errors.js";
import { signupAttemptMail, verifyEmailMail } from "./mails.js";
import { passwordProblem } from "./passwordRules.js";
import { HOUR_MS, type FieldErrors, type SelfServiceDeps } from "./selfServiceDeps.js";

export interface SignUpForm {
  username: string;
  email: string;
  password: string;
  passwordAgain: string;
}

export type SignUpField = keyof SignUpForm;

export type SignUpResult =
  | { kind: "invalid"; errors: FieldErrors<SignUpField> }
  /** The same answer for a new address and a taken one: look in your mailbox. */
  | { kind: "check_mail" }
  /** Without mail there is nothing to verify: the account can sign in at once. */
  | { kind: "signed_up"; user: UserRecord };

const NAME = /^[A-Za-z0-9_.@-]{1,100}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
export const PATH_FORGOT = "/login/forgot";

/**
 * Sign-up on an application's login page (issue 47 §2). With mail, the
 * account waits for its email to be verified before it can sign in; a taken
 * email is not revealed: the page says the same, and the owner is told by
 * mail instead. A taken user name is said plainly. Every request counts
 * against the client address's hourly budget, taken atomically in the store.
 */
export class SignUp {
  constructor(private readonly deps: SelfServiceDeps) {}

  async submit(form: SignUpForm, context: { clientAddress?: string; clientId: string; continueRequest?: string }): Promise<SignUpResult> {
    const { deps } = this;
    if (!(await deps.limits.take(`signup:${context.clientAddress ?? "unknown"}`, deps.signupMaxPerHour, deps.clock.now(), HOUR_MS))) {
      throw new OAuthError("temporarily_unavailable", "too many sign-ups from this address; try again later", 429);
    }
    const email = form.email.trim();
    const errors = this.check({ ...form, email });
    if (Object.keys(errors).length === 0 && (await deps.users.findByName(form.username))) errors.username = "This user name is taken. Choose another.";
    if (Object.keys(errors).length > 0) return { kind: "invalid", errors };
    // Hashed on both paths below, so a taken email takes as long as a new one.
    const passwordHash = await hashSecret(form.password, deps.hashCost);
    const audited = { event: "signup", clientAddress: context.clientAddress, clientId: context.clientId } as const;
    if (deps.mail) {
      const owners = await deps.users.findByEmail(email);
      if (owners.length > 0) {
        deps.audit.record({ ...audited, outcome: "failure", actor: { kind: "user", id: "", name: form.username }, userName: form.username, details: { reason: "email_taken" } });
        // To the address as the account holds it: its owner, whatever case was typed.
        void deps.mail.enqueue({ ...signupAttemptMail(deps.links.url(PATH_FORGOT)), to: owners[0]!.email, kind: "signup_attempt", user: owners[0] });
        return { kind: "check_mail" };
      }
    }
    const user = this.newUser(form.username, email, passwordHash);
    try {
      await deps.users.insert(user);
    } catch (err) {
      if (err instanceof ConflictError) return { kind: "invalid", errors: { username: "This user name is taken. Choose another." } };
      throw err;
    }
    deps.audit.record({ ...audited, outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, details: { verifyEmail: !!deps.mail } });
    if (!deps.mail) return { kind: "signed_up", user };
    const url = await deps.links.issue(user, "verify", context.continueRequest);
    void deps.mail.enqueue({ ...verifyEmailMail(user.name, url, deps.links.ttlSeconds), to: email, kind: "verify_email", user });
    return { kind: "check_mail" };
  }

  private check(form: SignUpForm): FieldErrors<SignUpField> {
    const errors: FieldErrors<SignUpField> = {};
    if (!NAME.test(form.username)) errors.username = "Choose a user name of 1-100 letters, digits or _ . @ -.";
    if (!form.email) errors.email = "Enter your email address.";
    else if (form.email.length > 320 || !EMAIL.test(form.email)) errors.email = "This is not an email address: it needs an @, as in name@example.com.";
    const problem = passwordProblem(form.password, { name: form.username, email: form.email }, this.deps.passwordMinLength);
    if (problem) errors.password = `The password ${problem}.`;
    if (form.passwordAgain !== form.password) errors.passwordAgain = "The two passwords differ.";
    return errors;
  }

  private newUser(name: string, email: string, passwordHash: string): UserRecord {
    const now = this.deps.clock.now();
    return {
      id: randomUUID(),
      name,
      passwordHash,
      displayName: "",
      email,
      emailVerified: false,
      // Only accounts made by sign-up with mail wait for their email (issue 47 §2).
      ...(this.deps.mail ? { mustVerifyEmail: true } : {}),
      avatar: "",
      phone: "",
      address: "",
      isAdmin: false,
      disabled: false,
      properties: {},
      createdAt: now,
      updatedAt: now,
    };
  }
}
