import type { IncomingMessage, ServerResponse } from "node:http";
import { randomBytes } from "node:crypto";
import { decodeBasic, sendJsonBody, startFakeProvider, type FakeProvider } from "./fakeUpstream.js";

/** Our registration at the fake GitHub and Google. */
export const PRESET_CLIENT = { clientId: "Iv1.preset-client", clientSecret: "preset secret+/=" };
/** A code the fakes accept without a visit to their authorize page, for tests that call our /callback themselves. */
export const PRESET_CODE = "preset-code-1";

const knownCode = (fake: FakeProvider, code: string | null) => code === PRESET_CODE || fake.authorizationOf(code) !== undefined;

export interface FakeGitHub extends FakeProvider {
  /** What /user says of the email: null when the user keeps it private. */
  publicEmail: string | null;
  /** The access tokens its token endpoint issued. */
  tokens: string[];
  /** The provider fields that point the GitHub preset here, as for GitHub Enterprise. */
  urls: { authUrl: string; tokenUrl: string; userInfoUrl: string; emailsUrl: string };
}

/**
 * GitHub as docs.github.com describes it: the token endpoint takes the
 * client credentials in the form, answers a form unless asked for JSON, and
 * an error with HTTP 200; the REST API (under /api/v3, as on GitHub
 * Enterprise) wants a User-Agent; /user has the public email or null;
 * /user/emails lists them.
 */
export async function startFakeGitHub(): Promise<FakeGitHub> {
  const fake = { publicEmail: null, tokens: [] as string[] } as unknown as FakeGitHub;
  const authorized = (req: IncomingMessage) => {
    const token = /^(?:Bearer|token) (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    return token !== undefined && fake.tokens.includes(token) && Boolean(req.headers["user-agent"]);
  };
  const provider = await startFakeProvider(
    {
      "POST /login/oauth/access_token": (req: IncomingMessage, res: ServerResponse, body: string) => {
        const form = new URLSearchParams(body);
        if (form.get("client_id") !== PRESET_CLIENT.clientId || form.get("client_secret") !== PRESET_CLIENT.clientSecret || !knownCode(fake, form.get("code"))) {
          return sendJsonBody(res, 200, { error: "bad_verification_code", error_description: "The code passed is incorrect or expired." });
        }
        const accessToken = `gho_${randomBytes(12).toString("hex")}`;
        fake.tokens.push(accessToken);
        const answer = { access_token: accessToken, scope: "read:user,user:email", token_type: "bearer" };
        if (/application\/json/.test(req.headers.accept ?? "")) return sendJsonBody(res, 200, answer);
        res.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }).end(new URLSearchParams(answer).toString());
      },
      "GET /api/v3/user": (req: IncomingMessage, res: ServerResponse) => {
        if (!authorized(req)) return sendJsonBody(res, 401, { message: "Requires authentication" });
        sendJsonBody(res, 200, {
          login: "octocat",
          id: 583231,
          node_id: "MDQ6VXNlcjU4MzIzMQ==",
          avatar_url: "https://avatars.githubusercontent.com/u/583231?v=4",
          type: "User",
          name: "The Octocat",
          email: fake.publicEmail,
        });
      },
      "GET /api/v3/user/emails": (req: IncomingMessage, res: ServerResponse) => {
        if (!authorized(req)) return sendJsonBody(res, 401, { message: "Requires authentication" });
        sendJsonBody(res, 200, [
          { email: "old@octo.example", verified: true, primary: false, visibility: null },
          { email: "unverified@octo.example", verified: false, primary: false, visibility: null },
          { email: "octocat@octo.example", verified: true, primary: true, visibility: "private" },
        ]);
      },
    },
    { authorizePath: "/login/oauth/authorize" },
  );
  const { origin } = provider;
  return Object.assign(fake, provider, {
    urls: {
      authUrl: `${origin}/login/oauth/authorize`,
      tokenUrl: `${origin}/login/oauth/access_token`,
      userInfoUrl: `${origin}/api/v3/user`,
      emailsUrl: `${origin}/api/v3/user/emails`,
    },
  });
}

export interface FakeGoogle extends FakeProvider {
  emailVerified: boolean;
  /** The access tokens its token endpoint issued. */
  tokens: string[];
  /** The provider fields that point the Google preset here. */
  urls: { authUrl: string; tokenUrl: string; userInfoUrl: string };
}

/** Google as developers.google.com describes it: Basic or form credentials, a JSON token answer and the OpenID Connect UserInfo. */
export async function startFakeGoogle(): Promise<FakeGoogle> {
  const fake = { emailVerified: true, tokens: [] as string[] } as unknown as FakeGoogle;
  const provider = await startFakeProvider(
    {
      "POST /token": (req: IncomingMessage, res: ServerResponse, body: string) => {
        const form = new URLSearchParams(body);
        const [id, secret] = decodeBasic(req.headers.authorization) ?? [form.get("client_id"), form.get("client_secret")];
        if (id !== PRESET_CLIENT.clientId || secret !== PRESET_CLIENT.clientSecret) return sendJsonBody(res, 401, { error: "invalid_client" });
        if (!knownCode(fake, form.get("code"))) return sendJsonBody(res, 400, { error: "invalid_grant", error_description: "Bad Request" });
        const accessToken = `ya29.${randomBytes(12).toString("hex")}`;
        fake.tokens.push(accessToken);
        sendJsonBody(res, 200, { access_token: accessToken, expires_in: 3599, scope: "openid https://www.googleapis.com/auth/userinfo.email", token_type: "Bearer", id_token: "eyJ.not.read" });
      },
      "GET /v1/userinfo": (req: IncomingMessage, res: ServerResponse) => {
        const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
        if (!token || !fake.tokens.includes(token)) return sendJsonBody(res, 401, { error: "invalid_token" });
        sendJsonBody(res, 200, {
          sub: "110169484474386276334",
          name: "Grace Google",
          given_name: "Grace",
          family_name: "Google",
          picture: "https://lh3.googleusercontent.com/a/grace",
          email: "grace@gmail.example",
          email_verified: fake.emailVerified,
        });
      },
    },
    { authorizePath: "/o/oauth2/v2/auth" },
  );
  const { origin } = provider;
  return Object.assign(fake, provider, {
    urls: { authUrl: `${origin}/o/oauth2/v2/auth`, tokenUrl: `${origin}/token`, userInfoUrl: `${origin}/v1/userinfo` },
  });
}
