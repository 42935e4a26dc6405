import type { IncomingMessage, ServerResponse } from "node:http";
import type { ClientAddressOf } from "../http/clientAddress.js";
import type { Domain } from "../domain/index.js";
import type { DoorAnswer, PathPattern } from "../http/door.js";
import { asOAuthError, OAuthError, worthLogging } from "../oauth/errors.js";
import { collectParams, readBody } from "../http/params.js";
import { FORM_POST_SCRIPT, FORM_POST_SCRIPT_PATH } from "./authorizationResponse.js";
import { CONSOLE_PATHS, consoleRoutes } from "./console.js";
import { DevicePages } from "./device.js";
import { DEVICE_PAGE_PATH } from "../oauth/deviceAuthorization.js";
import { sendPage } from "./http.js";
import { errorPage, STYLESHEET_PATH } from "./pages.js";
import { SignInPages } from "./signIn.js";
import { SELF_SERVICE_PATHS, SelfServicePages } from "./selfService.js";
import { CONSENT_PATH } from "./consent.js";
import { ACCOUNT_CONSENTS_PATH, AccountConsentPages } from "./accountConsents.js";
import { ACCOUNT_PATHS, AccountPages } from "./account.js";
import { PASSKEY_SCRIPT, PASSKEY_SCRIPT_PATH, WEBAUTHN_SCRIPT_PATH, webauthnBundle } from "./passkeyAssets.js";
import { PasskeySignIn } from "./passkeySignIn.js";
import { AccountPasskeyPages } from "./accountPasskeys.js";
import { ACCOUNT_PASSKEY_PATHS } from "./passkeyPages.js";
import { ENROL_PASSKEY_PATH } from "./factorPages.js";
import { STYLESHEET } from "./stylesheet.js";
import { requestContextOf, type LogUnexpected } from "../http/requestContext.js";

export interface WebHandlerOptions {
  maxBodyBytes: number;
  log: LogUnexpected;
  clientAddress: ClientAddressOf;
}

interface Route {
  methods: readonly string[];
  serve(req: IncomingMessage, res: ServerResponse, url: URL, name: string): Promise<void> | void;
}

const AUTHORIZE_PATH = "/login/oauth/authorize";
// RFC 8628 §3.3: where users enter a device's code.
const DEVICE_PATH = DEVICE_PAGE_PATH;
const LOGIN_PATH = "/login";
// The second step of a sign-in (web/factorStep.ts).
const FACTOR_PATH = "/login/factor";
const FACTOR_ENROL_PATH = "/login/factor/enrol";
const FACTOR_CONTINUE_PATH = "/login/factor/continue";
// Passkeys (web/passkeySignIn.ts, web/factorStep.ts): each form's POST, and its options fetched first.
const PASSKEY_PATH = "/login/passkey";
const PASSKEY_OPTIONS_PATH = "/login/passkey/options";
const FACTOR_PASSKEY_PATH = "/login/factor/passkey";
const FACTOR_PASSKEY_OPTIONS_PATH = "/login/factor/passkey/options";
const ENROL_PASSKEY_OPTIONS_PATH = `${ENROL_PASSKEY_PATH}/options`;
// Where a provider sends the browser back: its own callback (RFC 9700 §4.4.2), or the spec's shared {base_url}/callback.
const CALLBACK_PATH = "/callback";
const PROVIDER_CALLBACK_PATH = /^\/callback\/([A-Za-z0-9_.-]{1,100})$/;
const PROVIDER_PATH = /^\/login\/oauth\/provider\/([A-Za-z0-9_.-]{1,100})$/;

/** What this handler serves, as request labels: provider buttons share one. */
export const WEB_ROUTES: readonly (string | PathPattern)[] = [
  AUTHORIZE_PATH,
  LOGIN_PATH,
  FACTOR_PATH,
  FACTOR_ENROL_PATH,
  FACTOR_CONTINUE_PATH,
  PASSKEY_PATH,
  PASSKEY_OPTIONS_PATH,
  FACTOR_PASSKEY_PATH,
  FACTOR_PASSKEY_OPTIONS_PATH,
  ENROL_PASSKEY_PATH,
  ENROL_PASSKEY_OPTIONS_PATH,
  ...Object.values(ACCOUNT_PASSKEY_PATHS),
  CONSENT_PATH,
  ACCOUNT_CONSENTS_PATH,
  DEVICE_PATH,
  CALLBACK_PATH,
  STYLESHEET_PATH,
  FORM_POST_SCRIPT_PATH,
  WEBAUTHN_SCRIPT_PATH,
  PASSKEY_SCRIPT_PATH,
  ...CONSOLE_PATHS,
  ...Object.values(SELF_SERVICE_PATHS),
  ...Object.values(ACCOUNT_PATHS),
  { pattern: PROVIDER_PATH, label: "/login/oauth/provider/{name}" },
  { pattern: PROVIDER_CALLBACK_PATH, label: "/callback/{name}" },
];

/**
 * The hand-written browser front door: the authorize endpoint, the login
 * form, provider buttons, the providers' callbacks and the stylesheet.
 * Returns false for any other path, so the request goes on to the REST facade.
 */
export function createWebHandler(domain: Domain, options: WebHandlerOptions) {
  const pages = new SignInPages(domain);
  const selfService = new SelfServicePages(domain, pages);
  const accountConsents = new AccountConsentPages(domain, pages);
  const devices = new DevicePages(domain, pages);
  const account = new AccountPages(domain, pages);
  const css = Buffer.from(STYLESHEET);
  const formPostScript = Buffer.from(FORM_POST_SCRIPT);
  const passkeyScript = Buffer.from(PASSKEY_SCRIPT);
  const webauthnScript = webauthnBundle();

  // Query parameters, plus the form body of a POST; repeated ones are refused (RFC 6749 §3.1).
  const params = async (req: IncomingMessage, url: URL) =>
    collectParams(url, req.headers["content-type"], req.method === "POST" ? await readBody(req, options.maxBodyBytes) : "");

  const routes: Record<string, Route> = {
    // OIDC Core §3.1.2.1: the authorization endpoint takes GET and POST.
    [AUTHORIZE_PATH]: {
      methods: ["GET", "POST"],
      serve: async (req, res, url) => pages.authorize(req, res, await params(req, url), options.clientAddress(req)),
    },
    [LOGIN_PATH]: {
      methods: ["POST"],
      serve: async (req, res, url) => pages.login(req, res, await params(req, url), options.clientAddress(req)),
    },
    [FACTOR_PATH]: { methods: ["POST"], serve: async (req, res, url) => pages.factorStep.verify(req, res, await params(req, url), options.clientAddress(req)) },
    [FACTOR_ENROL_PATH]: { methods: ["POST"], serve: async (req, res, url) => pages.factorStep.enrol(req, res, await params(req, url), options.clientAddress(req)) },
    [FACTOR_CONTINUE_PATH]: { methods: ["POST"], serve: async (req, res, url) => pages.factorStep.finish(req, res, await params(req, url)) },
    [CONSENT_PATH]: { methods: ["POST"], serve: async (req, res, url) => pages.consent.decide(req, res, await params(req, url)) },
    [ACCOUNT_CONSENTS_PATH]: {
      methods: ["GET", "POST"],
      serve: async (req, res, url) => (req.method === "POST" ? accountConsents.revoke(req, res, await params(req, url)) : accountConsents.show(req, res)),
    },
    [DEVICE_PATH]: {
      methods: ["GET", "POST"],
      serve: async (req, res, url) =>
        req.method === "POST" ? devices.submit(req, res, await params(req, url), options.clientAddress(req)) : devices.show(req, res, await params(req, url)),
    },
    [CALLBACK_PATH]: { methods: ["GET"], serve: async (req, res, url) => pages.callback(req, res, undefined, await params(req, url), options.clientAddress(req)) },
    [STYLESHEET_PATH]: { methods: ["GET"], serve: (_req, res) => sendAsset(res, "text/css; charset=utf-8", css) },
    [FORM_POST_SCRIPT_PATH]: { methods: ["GET"], serve: (_req, res) => sendAsset(res, "text/javascript; charset=utf-8", formPostScript) },
    [WEBAUTHN_SCRIPT_PATH]: { methods: ["GET"], serve: (_req, res) => sendAsset(res, "text/javascript; charset=utf-8", webauthnScript) },
    [PASSKEY_SCRIPT_PATH]: { methods: ["GET"], serve: (_req, res) => sendAsset(res, "text/javascript; charset=utf-8", passkeyScript) },
    ...passkeyRoutes(domain, pages, params, options.clientAddress),
    // Self-service accounts (issue 47): each path's GET shows its form, its POST takes it.
    ...selfServiceRoutes(selfService, params, options.clientAddress),
    // The account page (issue #46 §5): GET the page, POST each action.
    ...accountRoutes(account, params, options.clientAddress),
    // The admin console at /admin/ (web/console.ts).
    ...consoleRoutes(domain),
  };

  const providerButton: Route = {
    methods: ["POST"],
    serve: async (req, res, url, name) => pages.provider(req, res, name, await params(req, url)),
  };
  const providerCallback: Route = {
    methods: ["GET"],
    serve: async (req, res, url, name) => pages.callback(req, res, name, await params(req, url), options.clientAddress(req)),
  };

  return function handleWeb(req: IncomingMessage, res: ServerResponse, url: URL): DoorAnswer {
    const buttonOf = PROVIDER_PATH.exec(url.pathname)?.[1];
    const callbackOf = PROVIDER_CALLBACK_PATH.exec(url.pathname)?.[1];
    const providerName = buttonOf ?? callbackOf;
    const route = buttonOf ? providerButton : callbackOf ? providerCallback : Object.hasOwn(routes, url.pathname) ? routes[url.pathname] : undefined;
    if (!route) return false;
    return serve(req, res, url, route, providerName ?? "");
  };

  function sendAsset(res: ServerResponse, contentType: string, body: Buffer): void {
    res.writeHead(200, {
      "content-type": contentType,
      "content-length": body.length,
      "cache-control": "public, max-age=3600",
      "x-content-type-options": "nosniff",
    });
    res.end(body);
  }

  async function serve(req: IncomingMessage, res: ServerResponse, url: URL, route: Route, providerName: string): Promise<void> {
    try {
      if (!route.methods.includes(req.method ?? "GET")) {
        res.setHeader("allow", route.methods.join(", "));
        throw new OAuthError("invalid_request", `use ${route.methods.join(" or ")}`, 405);
      }
      await route.serve(req, res, url, providerName);
    } catch (err) {
      // A database outage or text it cannot store is an OAuth error too (503, 400), not a crash page.
      const known = asOAuthError(err);
      if (worthLogging(err)) options.log(err, requestContextOf(req));
      if (res.headersSent) res.destroy();
      else if (known) pages.showError(res, known);
      else sendPage(res, 500, errorPage("Something went wrong", "The sign-in service had an internal error."));
    }
  }
}

type ParamsOf = (req: IncomingMessage, url: URL) => Promise<ReadonlyMap<string, string>>;

/** Passkeys: the login page's sign-in, the second step's (and its enrolment), and /account/passkeys. */
function passkeyRoutes(domain: Domain, pages: SignInPages, params: ParamsOf, clientAddress: ClientAddressOf): Record<string, Route> {
  const signIn = new PasskeySignIn(domain, pages);
  const account = new AccountPasskeyPages(domain, pages);
  const post = (take: (req: IncomingMessage, res: ServerResponse, p: ReadonlyMap<string, string>, address?: string) => Promise<void>): Route => ({
    methods: ["POST"],
    serve: async (req, res, url) => take(req, res, await params(req, url), clientAddress(req)),
  });
  return {
    [PASSKEY_OPTIONS_PATH]: post((req, res, p) => signIn.options(req, res, p)),
    [PASSKEY_PATH]: post((...a) => signIn.signIn(...a)),
    [FACTOR_PASSKEY_OPTIONS_PATH]: post((req, res, p) => pages.factorStep.passkeyOptions(req, res, p)),
    [FACTOR_PASSKEY_PATH]: post((...a) => pages.factorStep.passkey(...a)),
    [ENROL_PASSKEY_OPTIONS_PATH]: post((req, res, p) => pages.factorStep.enrolPasskeyOptions(req, res, p)),
    [ENROL_PASSKEY_PATH]: post((...a) => pages.factorStep.enrolPasskey(...a)),
    [ACCOUNT_PASSKEY_PATHS.list]: { methods: ["GET"], serve: async (req, res, url) => account.show(req, res, await params(req, url)) },
    [ACCOUNT_PASSKEY_PATHS.options]: post((req, res, p) => account.options(req, res, p)),
    [ACCOUNT_PASSKEY_PATHS.add]: post((...a) => account.add(...a)),
    [ACCOUNT_PASSKEY_PATHS.rename]: post((req, res, p) => account.rename(req, res, p)),
    [ACCOUNT_PASSKEY_PATHS.remove]: post((req, res, p) => account.remove(req, res, p)),
  };
}

/** One route per self-service path: GET to its form, POST to its handler, with the client address for the budgets. */
function selfServiceRoutes(pages: SelfServicePages, params: ParamsOf, clientAddress: ClientAddressOf): Record<string, Route> {
  const route = (
    show: (req: IncomingMessage, res: ServerResponse, p: ReadonlyMap<string, string>) => Promise<void>,
    take: (req: IncomingMessage, res: ServerResponse, p: ReadonlyMap<string, string>, address?: string) => Promise<void>,
  ): Route => ({
    methods: ["GET", "POST"],
    serve: async (req, res, url) => (req.method === "POST" ? take(req, res, await params(req, url), clientAddress(req)) : show(req, res, await params(req, url))),
  });
  return {
    [SELF_SERVICE_PATHS.signUp]: route((...a) => pages.signUpForm(...a), (...a) => pages.signUp(...a)),
    [SELF_SERVICE_PATHS.forgot]: route((...a) => pages.forgotForm(...a), (...a) => pages.forgot(...a)),
    [SELF_SERVICE_PATHS.verify]: route((...a) => pages.verifyForm(...a), (...a) => pages.verify(...a)),
    [SELF_SERVICE_PATHS.reset]: route((...a) => pages.resetForm(...a), (...a) => pages.reset(...a)),
  };
}

/** The account page's routes: its GET, and a POST per action, with the client address for the budgets. */
function accountRoutes(account: AccountPages, params: ParamsOf, clientAddress: ClientAddressOf): Record<string, Route> {
  const post = (take: (req: IncomingMessage, res: ServerResponse, p: ReadonlyMap<string, string>, address?: string) => Promise<void>): Route => ({
    methods: ["POST"],
    serve: async (req, res, url) => take(req, res, await params(req, url), clientAddress(req)),
  });
  return {
    [ACCOUNT_PATHS.page]: { methods: ["GET"], serve: async (req, res, url) => account.show(req, res, await params(req, url)) },
    [ACCOUNT_PATHS.password]: post((...a) => account.changePassword(...a)),
    [ACCOUNT_PATHS.totp]: post((req, res, p) => account.beginTotp(req, res, p)),
    [ACCOUNT_PATHS.totpConfirm]: post((...a) => account.confirmTotp(...a)),
    [ACCOUNT_PATHS.removeFactor]: post((req, res, p) => account.removeFactor(req, res, p)),
    [ACCOUNT_PATHS.recovery]: post((req, res, p) => account.newRecoveryCodes(req, res, p)),
    [ACCOUNT_PATHS.endSession]: post((...a) => account.endSession(...a)),
    [ACCOUNT_PATHS.unlink]: post((req, res, p) => account.unlink(req, res, p)),
  };
}
