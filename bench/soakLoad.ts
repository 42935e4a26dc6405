import { TEST_APP, TEST_USER } from "../test/support/server.js";

/** The soak's application: every grant, refresh tokens on. */
export const SOAK_APP = { ...TEST_APP, refreshExpireInHours: 1 };
export const SOAK_USER = TEST_USER;

export type Operation = "issue" | "introspect" | "userinfo" | "refresh" | "revoke";

/** The mix, as weights: mostly verification (what resource servers do), some issuance and rotation. */
export const MIX: Record<Operation, number> = { issue: 10, introspect: 35, userinfo: 25, refresh: 20, revoke: 10 };

const basic = `Basic ${Buffer.from(`${SOAK_APP.clientId}:${SOAK_APP.clientSecret}`).toString("base64")}`;
const FORM = { "content-type": "application/x-www-form-urlencoded", authorization: basic };
/** Tokens one worker keeps; beyond this it revokes before it issues. */
const POOL = 50;

interface Held {
  access: string;
  refresh: string;
}

/**
 * One client of the soak: its own tokens (never shared, so no two workers
 * race on one token and every answer has one right value), a bounded pool,
 * and one request at a time.
 */
export class SoakWorker {
  private readonly held: Held[] = [];

  constructor(private readonly url: string) {}

  /** Pick the next operation; without tokens the only choice is to issue some. */
  next(random: number): Operation {
    if (this.held.length === 0) return "issue";
    let acc = 0;
    const total = Object.values(MIX).reduce((a, b) => a + b, 0);
    for (const [op, weight] of Object.entries(MIX) as Array<[Operation, number]>) {
      acc += weight / total;
      if (random < acc) return op === "issue" && this.held.length >= POOL ? "revoke" : op;
    }
    return "introspect";
  }

  /** Run one operation; returns an error description when the answer was wrong. */
  async run(op: Operation, random: number): Promise<string | undefined> {
    const pick = () => Math.floor(random * this.held.length);
    switch (op) {
      case "issue": {
        // The password grant costs an scrypt; most issuance in the field is client_credentials or refresh.
        const res = await this.form("/api/login/oauth/access_token", { grant_type: "password", username: SOAK_USER.name, password: SOAK_USER.password, scope: "openid profile" });
        if (res.status !== 200) return `issue: ${res.status} ${JSON.stringify(res.body)}`;
        this.held.push({ access: res.body.access_token, refresh: res.body.refresh_token });
        return undefined;
      }
      case "introspect": {
        const { access } = this.held[pick()]!;
        const res = await this.form("/api/login/oauth/introspect", { token: access });
        return res.status === 200 && res.body.active === true ? undefined : `introspect: ${res.status} ${JSON.stringify(res.body)}`;
      }
      case "userinfo": {
        const { access } = this.held[pick()]!;
        const res = await fetch(`${this.url}/api/userinfo`, { headers: { authorization: `Bearer ${access}` } });
        const body = (await res.json()) as { sub?: string };
        return res.status === 200 && body.sub ? undefined : `userinfo: ${res.status} ${JSON.stringify(body)}`;
      }
      case "refresh": {
        const i = pick();
        const res = await this.form("/api/login/oauth/access_token", { grant_type: "refresh_token", refresh_token: this.held[i]!.refresh });
        if (res.status !== 200) return `refresh: ${res.status} ${JSON.stringify(res.body)}`;
        this.held[i] = { access: res.body.access_token, refresh: res.body.refresh_token };
        return undefined;
      }
      case "revoke": {
        const [gone] = this.held.splice(pick(), 1);
        const res = await this.form("/api/login/oauth/revoke", { token: gone!.refresh, token_type_hint: "refresh_token" });
        return res.status === 200 ? undefined : `revoke: ${res.status} ${JSON.stringify(res.body)}`;
      }
    }
  }

  private async form(path: string, params: Record<string, string>): Promise<{ status: number; body: any }> {
    const res = await fetch(`${this.url}${path}`, { method: "POST", headers: FORM, body: new URLSearchParams(params) });
    return { status: res.status, body: await res.json() };
  }
}
