import type { RunningServer } from "../../src/app/server.js";
import { totpCode } from "../../src/oauth/factors/totp.js";
import { TEST_APP } from "./server.js";
import { basicAuth, postForm } from "./server.js";
import { decodeJwt } from "jose";

/** A one-time code factor for the named user, enrolled through the domain; returns its secret and recovery codes. */
export async function enrolTotp(server: RunningServer, userName: string): Promise<{ secret: string; recovery: string[] }> {
  const user = (await server.store.users.findByName(userName))!;
  const { factorId, secret } = await server.domain.secondFactors.beginTotp(user);
  // One step back: the test's own first code (this step) stays free.
  const recovery = await server.domain.secondFactors.confirmTotp(user, factorId, totpCode(secret, server.domain.clock.now() - 30_000));
  if (!recovery) throw new Error("enrolment refused its own code");
  return { secret, recovery };
}

/** The value of the element with this id in a page (text content, entities undone). */
export function elementText(html: string, id: string): string {
  const text = new RegExp(`id="${id}"[^>]*>([\\s\\S]*?)</`).exec(html)?.[1];
  if (text === undefined) throw new Error(`no #${id} in the page`);
  return text.replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c))).trim();
}

/** Redeem a code at the token endpoint as the test application; the tokens and the ID token's claims. */
export async function redeem(server: RunningServer, location: URL, client = TEST_APP) {
  const res = await postForm(`${server.url}/api/login/oauth/access_token`, {
    grant_type: "authorization_code",
    code: location.searchParams.get("code") ?? "",
    redirect_uri: client.redirectUris[0]!,
  }, { authorization: basicAuth(client.clientId, client.clientSecret) });
  if (res.status !== 200) throw new Error(`token endpoint answered ${res.status} ${res.text}`);
  return { tokens: res.body as { access_token: string; id_token: string; refresh_token?: string }, idToken: decodeJwt(res.body.id_token as string) };
}
