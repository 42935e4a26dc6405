import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { sha256 } from "../../src/oauth/secrets.js";
import { authorizeUrl, browse, pkcePair, signIn, type CookieJar } from "../support/browserless.js";
import { isActive, TOKEN_PATH } from "../support/oauth.js";
import { grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** A client the attacker registered for itself, with its own valid secret. */
const ATTACKER_APP = { name: "attacker", clientId: "attacker-client", clientSecret: "attacker-secret-0123456789", redirectUris: TEST_APP.redirectUris };

type Fields = Record<string, string>;
/** What a token request came back with, whatever the door: the tokens, or the RFC 6749 error code. */
type Outcome = { tokens?: { access_token: string; refresh_token: string }; error?: string };

/**
 * Issue 24, item 3: a used code sent again by someone who is not its client
 * (any client_id, a dummy code_verifier, a wrong secret, another client's
 * secret) is refused as invalid_client or invalid_grant and changes
 * nothing; only the code's own client, authenticated, revokes what it minted.
 */
describe("replaying a used code without credentials", () => {
  let server: RunningServer;
  let jar: CookieJar;
  let grpcJs: ReturnType<typeof grpcJsClients>;

  before(async () => {
    server = await startTestServer({ config: { applications: [{ ...TEST_APP, refreshExpireInHours: 1 }, ATTACKER_APP], users: [TEST_USER] } });
    ({ jar } = await signIn(server));
    grpcJs = grpcJsClients(server.port);
  });
  after(async () => {
    grpcJs.token.close();
    await server.close();
  });

  const doors: Record<string, (fields: Fields) => Promise<Outcome>> = {
    REST: async (fields) => {
      const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", ...fields });
      return res.status === 200 ? { tokens: res.body } : { error: res.body.error };
    },
    gRPC: async (fields) => {
      const { response, error } = await grpcJsCall(grpcJs.token, "Token", { grant_type: "authorization_code", ...fields });
      return response ? { tokens: response } : { error: String(error!.metadata.get("x-oauth-error")[0]) };
    },
  };

  async function code(params: Fields = {}): Promise<string> {
    const res = await browse(authorizeUrl(server.url, params), jar);
    assert.equal(res.status, 303);
    return new URL(res.headers.get("location")!).searchParams.get("code")!;
  }

  async function refreshRevoked(refreshToken: string): Promise<boolean> {
    return (await server.store.refreshTokens.findByHash(sha256(refreshToken)))?.revokedAt != null;
  }

  for (const [door, exchange] of Object.entries(doors)) {
    for (const pkce of [true, false]) {
      it(`over ${door}, ${pkce ? "a PKCE code" : "a code of a confidential client"}: strangers change nothing, the real client's own replay revokes`, async () => {
        const { verifier, challenge } = pkcePair();
        const issued = await code(pkce ? { code_challenge: challenge, code_challenge_method: "S256" } : {});
        // The real client redeems it: with its verifier alone (public) or with its secret.
        const own: Fields = pkce
          ? { client_id: TEST_APP.clientId, code: issued, code_verifier: verifier }
          : { client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, code: issued };
        const first = await exchange(own);
        assert.ok(first.tokens, JSON.stringify(first));
        const { access_token, refresh_token } = first.tokens;

        const dummyVerifier = pkcePair().verifier;
        const attempts: Array<[string, Fields, string]> = [
          ["another client_id, a dummy verifier", { client_id: ATTACKER_APP.clientId, code: issued, code_verifier: dummyVerifier }, "invalid_grant"],
          ["the real client_id, a dummy verifier", { client_id: TEST_APP.clientId, code: issued, code_verifier: dummyVerifier }, "invalid_grant"],
          ["an unknown client_id, a dummy verifier", { client_id: "no-such-client", code: issued, code_verifier: dummyVerifier }, "invalid_client"],
          ["the real client_id, a wrong secret", { client_id: TEST_APP.clientId, client_secret: "wrong-secret-0123456789", code: issued }, "invalid_client"],
          ["the real client_id, no secret, no verifier", { client_id: TEST_APP.clientId, code: issued }, "invalid_client"],
          ["another client, authenticated with its own secret", { client_id: ATTACKER_APP.clientId, client_secret: ATTACKER_APP.clientSecret, code: issued }, "invalid_grant"],
          [
            "another client, its own secret and a dummy verifier",
            { client_id: ATTACKER_APP.clientId, client_secret: ATTACKER_APP.clientSecret, code: issued, code_verifier: dummyVerifier },
            "invalid_grant",
          ],
        ];
        if (!pkce) {
          // A code issued without a challenge: a verifier is a downgrade attempt, refused before the replay check.
          attempts.push(["the real client_id, its secret and a verifier", { ...own, code_verifier: dummyVerifier }, "invalid_grant"]);
        }
        for (const [name, fields, error] of attempts) {
          assert.deepEqual(await exchange(fields), { error }, name);
          assert.equal(await isActive(server, access_token), true, `the real client's access token stays active after: ${name}`);
          assert.equal(await refreshRevoked(refresh_token), false, `the real client's refresh token stays live after: ${name}`);
        }

        // The real client, authenticated (for a public client: the right verifier), replays it: theft is assumed.
        assert.deepEqual(await exchange(own), { error: "invalid_grant" });
        assert.equal(await isActive(server, access_token), false, "the real client's own replay revokes the access token");
        assert.equal(await refreshRevoked(refresh_token), true, "and the refresh token");
      });
    }
  }
});
