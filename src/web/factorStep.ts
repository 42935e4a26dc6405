import type { IncomingMessage, ServerResponse } from "node:http";
import QRCode from "qrcode";
import type { Domain } from "../domain/index.js";
import { OAuthError } from "../oauth/errors.js";
import { withSecondFactor } from "../oauth/factors/amr.js";
import type { PendingAuthorization } from "../oauth/pendingAuthorizations.js";
import type { SignInProof } from "../oauth/sessions.js";
import { sendPage } from "./http.js";
import { sendJson } from "../http/answers.js";
import { enrolPage, factorPage, recoveryCodesPage, type FactorForm } from "./factorPages.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";

/** What the factor step needs of the sign-in pages around it. */
export interface SignInFlow {
  pendingFromForm(req: IncomingMessage, form: ReadonlyMap<string, string>): Promise<{ pending: PendingAuthorization; app: ApplicationRecord; csrfToken: string }>;
  completeSignIn(req: IncomingMessage, res: ServerResponse, pending: PendingAuthorization, user: UserRecord, proof: SignInProof): Promise<void>;
}

/**
 * The second step of a browser sign-in (issue #46 §4): after a first factor
 * (a password, a provider, or an existing session asked for more), the
 * user's one-time code, passkey or recovery code, or enrolling a one-time
 * code or a passkey where the policy requires it. What each step proved is
 * kept on the pending authorize request, server-side; no session exists and
 * no code is issued until the last step is done. Reusable by any page that signs a user in (the device
 * page): call `afterFirstFactor` where the password was checked.
 */
export class FactorStepPages {
  constructor(
    private readonly domain: Domain,
    private readonly flow: SignInFlow,
  ) {}

  /** A first factor passed (`amr`: what it proved): finish, or show the second step. */
  async afterFirstFactor(
    req: IncomingMessage,
    res: ServerResponse,
    pending: PendingAuthorization,
    app: ApplicationRecord,
    user: UserRecord,
    amr: string[],
    csrfToken: string,
    cookies: string[] = [],
  ): Promise<void> {
    const next = await this.domain.signInPolicy.next(app, pending.request, user.id);
    if (next === "done") return this.flow.completeSignIn(req, res, pending, user, { amr });
    if (!(await this.domain.pendingAuthorizations.recordStep(pending, { userId: user.id, amr: amr.join(" ") }))) {
      throw new OAuthError("invalid_request", "this sign-in request is unknown or has expired");
    }
    const form = { requestId: pending.id, csrfToken, appName: app.name };
    if (next === "verify") return this.showFactorPage(res, 200, form, user, cookies);
    const enrolment = await this.domain.secondFactors.beginTotp(user);
    await this.showEnrolment(res, 200, form, enrolment, cookies);
  }

  /** POST /login/factor: the one-time code or recovery code. */
  async verify(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken, user, firstFactor } = await this.stepFromForm(req, form);
    const view = { requestId: pending.id, csrfToken, appName: app.name };
    let proof;
    try {
      proof = await this.domain.secondFactors.verify(user, form.get("code") ?? "", clientAddress);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return this.showFactorPage(res, 400, { ...view, error: sentence(err.description) }, user);
    }
    if (!proof) return this.showFactorPage(res, 400, { ...view, error: "That code is not valid. Try the next code your app shows." }, user);
    await this.flow.completeSignIn(req, res, pending, user, { amr: withSecondFactor(firstFactor, proof.amr), factorId: proof.factorId });
  }

  /** POST /login/factor/passkey/options: a challenge for one of this user's passkeys, bound to the pending request (JSON). */
  async passkeyOptions(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { pending, user } = await this.stepFromForm(req, form);
    sendJson(res, 200, await this.domain.passkeys.factorOptions(user, pending.id));
  }

  /** POST /login/factor/passkey: the passkey's answer, as the second factor (amr: the first factor's, the key's, `mfa`). */
  async passkey(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken, user, firstFactor } = await this.stepFromForm(req, form);
    const proof = await this.domain.passkeys.verifyFactor(user, form.get("response") ?? "", pending.id, clientAddress);
    const view = { requestId: pending.id, csrfToken, appName: app.name };
    if (!proof) return this.showFactorPage(res, 400, { ...view, error: "That passkey was not accepted. Try again, or type a code." }, user);
    await this.flow.completeSignIn(req, res, pending, user, { amr: withSecondFactor(firstFactor, proof.amr), factorId: proof.factorId });
  }

  /** The second step's page, with the passkey button for a user who has one. */
  private async showFactorPage(res: ServerResponse, status: number, form: FactorForm, user: UserRecord, cookies: string[] = []): Promise<void> {
    const passkeys = this.domain.passkeys.enabled && (await this.domain.passkeys.list(user.id)).length > 0;
    sendPage(res, status, factorPage({ ...form, passkeys }), cookies, { passkeys });
  }

  /** POST /login/factor/enrol: the first code of a new one-time code secret; then the recovery codes. */
  async enrol(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken, user, firstFactor } = await this.stepFromForm(req, form);
    const view = { requestId: pending.id, csrfToken, appName: app.name };
    const factorId = form.get("factor") ?? "";
    let codes: string[] | undefined;
    let error = "That code is not valid. Try the next code your app shows.";
    try {
      codes = await this.domain.secondFactors.confirmTotp(user, factorId, form.get("code") ?? "", clientAddress);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      error = sentence(err.description);
    }
    if (!codes) {
      const enrolment = await this.domain.secondFactors.resumeTotp(user, factorId);
      if (!enrolment) throw new OAuthError("invalid_request", "this enrolment is unknown or was completed");
      return this.showEnrolment(res, 400, { ...view, error }, enrolment);
    }
    await this.enrolled(req, res, view, pending, user, { amr: withSecondFactor(firstFactor, ["otp"]), factorId }, codes);
  }

  /** POST /login/factor/enrol/passkey/options: registration options as on the account page, the challenge bound to this pending sign-in (JSON). */
  async enrolPasskeyOptions(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { pending, user } = await this.enrolmentStep(req, form);
    sendJson(res, 200, await this.domain.passkeys.registrationOptions(user, pending.id));
  }

  /**
   * POST /login/factor/enrol/passkey: the authenticator's answer, for the
   * user who passed this sign-in's first factor (never a name in the form);
   * then as after a one-time code: the recovery codes, the sign-in goes on
   * (amr: the first factor's, the key's, `mfa`).
   */
  async enrolPasskey(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>, clientAddress?: string): Promise<void> {
    const { pending, app, csrfToken, user, firstFactor } = await this.enrolmentStep(req, form);
    const view = { requestId: pending.id, csrfToken, appName: app.name };
    const enrolled = await this.domain.passkeys.enrolFirst(user, form.get("response") ?? "", pending.id, clientAddress);
    if (!enrolled) {
      // The one-time code offered beside it stays as it was, or is made anew.
      const totp = (await this.domain.secondFactors.resumeTotp(user, form.get("factor") ?? "")) ?? (await this.domain.secondFactors.beginTotp(user));
      return this.showEnrolment(res, 400, { ...view, error: "The passkey was not added. Try again, or use an authenticator app." }, totp);
    }
    const { proof, codes } = enrolled;
    await this.enrolled(req, res, view, pending, user, { amr: withSecondFactor(firstFactor, proof.amr), factorId: proof.factorId }, codes);
  }

  /** A first factor just enrolled: its recovery codes first, if it brought any; else the sign-in completes. */
  private async enrolled(req: IncomingMessage, res: ServerResponse, view: FactorForm, pending: PendingAuthorization, user: UserRecord, proof: SignInProof, codes: string[]): Promise<void> {
    if (codes.length === 0) return this.flow.completeSignIn(req, res, pending, user, proof);
    await this.domain.pendingAuthorizations.recordStep(pending, { userId: user.id, amr: proof.amr.join(" "), factorId: proof.factorId });
    sendPage(res, 200, recoveryCodesPage({ ...view, codes }));
  }

  /** A factor step where the user must enrol one: the policy asks for it, and the user has none yet (nor proved one here). */
  private async enrolmentStep(req: IncomingMessage, form: ReadonlyMap<string, string>) {
    const step = await this.stepFromForm(req, form);
    const next = await this.domain.signInPolicy.next(step.app, step.pending.request, step.user.id);
    if (next !== "enrol" || step.firstFactor.includes("mfa")) throw new OAuthError("access_denied", "this sign-in has no factor to enrol", 403);
    return step;
  }

  /** POST /login/factor/continue: after the recovery codes were shown; only once the second factor is proven. */
  async finish(req: IncomingMessage, res: ServerResponse, form: ReadonlyMap<string, string>): Promise<void> {
    const { pending, user, firstFactor } = await this.stepFromForm(req, form);
    if (!firstFactor.includes("mfa")) throw new OAuthError("access_denied", "the second step of this sign-in is not done", 403);
    await this.flow.completeSignIn(req, res, pending, user, { amr: firstFactor, factorId: pending.step?.factorId });
  }

  /** The pending request of a factor form, which a first factor must have passed, and its user. */
  private async stepFromForm(req: IncomingMessage, form: ReadonlyMap<string, string>) {
    const found = await this.flow.pendingFromForm(req, form);
    const step = found.pending.step;
    const user = step && (await this.domain.signInPolicy.user(step.userId));
    if (!step || !user) throw new OAuthError("access_denied", "sign in with your password first", 403);
    return { ...found, user, firstFactor: step.amr.split(" ") };
  }

  private async showEnrolment(res: ServerResponse, status: number, form: FactorForm, enrolment: { factorId: string; uri: string; secret: string }, cookies: string[] = []): Promise<void> {
    // A PNG in a data: URI, which the pages' CSP allows as an image: no script draws it.
    const qrDataUrl = await QRCode.toDataURL(enrolment.uri, { margin: 1, width: 240 });
    const passkeys = this.domain.passkeys.enabled;
    sendPage(res, status, enrolPage({ ...form, ...enrolment, qrDataUrl, passkeys }), cookies, { passkeys });
  }
}

const sentence = (text: string) => (text ? `${text[0]!.toUpperCase()}${text.slice(1)}.` : text);
