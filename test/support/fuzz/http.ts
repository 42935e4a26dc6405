import fc from "fast-check";
import type { WireRequest } from "./wire.js";
import { authorizationValue, hostileString, redirectUriValue, scopeValue, type KnownValues } from "./values.js";

/** A parameter as a client sends it; names may repeat. */
export type Param = [string, string];

const OAUTH_PARAMS = [
  "grant_type", "client_id", "client_secret", "scope", "username", "password", "code", "redirect_uri", "code_verifier",
  "refresh_token", "token", "token_type_hint", "access_token", "accessToken", "state", "nonce", "response_type",
  "response_mode", "code_challenge", "code_challenge_method", "prompt", "max_age", "id_token_hint",
  "post_logout_redirect_uri", "request", "csrf_token", "clientId", "grantType", "login_hint", "claims", "request_uri",
];

/** A value that fits the parameter's name often enough to get past the first checks. */
export function valueFor(name: string, known: KnownValues): fc.Arbitrary<string> {
  const any = hostileString(known);
  const pick = (...values: string[]) => fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...values) }, { weight: 2, arbitrary: any });
  switch (name) {
    case "scope":
      return scopeValue(known);
    case "redirect_uri":
    case "post_logout_redirect_uri":
      return redirectUriValue(known);
    case "grant_type":
    case "grantType":
      return pick("password", "client_credentials", "authorization_code", "refresh_token", "implicit", "urn:ietf:params:oauth:grant-type:jwt-bearer");
    case "response_type":
      return pick("code", "token", "id_token", "id_token token", "token id_token", "code id_token", "none");
    case "response_mode":
      return pick("query", "fragment", "form_post", "web_message");
    case "claims":
      return pick('{"id_token":{"name":null,"email":{"essential":true}}}', '{"userinfo":{"name":null}}', "{", "[]", '{"id_token":{"name":true}}');
    case "login_hint":
      return pick(known.username);
    case "client_id":
    case "clientId":
      return pick(known.clientId);
    case "client_secret":
      return pick(known.clientSecret);
    case "username":
      return pick(known.username);
    case "password":
      return pick(known.password);
    case "token":
    case "access_token":
    case "accessToken":
      return pick(known.accessToken, known.refreshToken, known.clientToken, known.idToken);
    case "refresh_token":
      return pick(known.refreshToken);
    case "id_token_hint":
      return pick(known.idToken, known.accessToken);
    case "code":
      return pick(known.code);
    case "request":
      return pick(known.pendingRequest);
    case "csrf_token":
      return pick(known.csrfToken);
    case "code_challenge_method":
      return pick("S256", "plain", "s256");
    case "prompt":
      return pick("none", "login", "none login", "consent select_account");
    case "max_age":
      return pick("0", "-1", "99999999999", "1.5");
    default:
      return any;
  }
}

/** Parameters named like the endpoint's own (and other OAuth ones), sometimes repeated, sometimes unknown. */
export function paramsArb(names: readonly string[], known: KnownValues): fc.Arbitrary<Param[]> {
  const all = [...new Set([...names, ...OAUTH_PARAMS])];
  const param = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...names.length ? names : all).chain((n) => valueFor(n, known).map((v): Param => [n, v])) },
    { weight: 2, arbitrary: fc.constantFrom(...all).chain((n) => valueFor(n, known).map((v): Param => [n, v])) },
    { weight: 1, arbitrary: fc.tuple(hostileString(), hostileString(known)) },
  );
  return fc.array(param, { maxLength: 12 });
}

export const form = (params: Param[]) => new URLSearchParams(params).toString();

/** A query string: encoded parameters, or broken encoding. */
export function queryArb(params: fc.Arbitrary<Param[]>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: params.map(form) },
    { weight: 1, arbitrary: fc.constantFrom("%", "%%", "a=%E0%A4%A", "=&=&", "a&a&a", "a=1;b=2", "#x", "?", "a[]=1&a[]=2", "__proto__[x]=1") },
    { weight: 1, arbitrary: fc.integer({ min: 2_000, max: 20_000 }).map((n) => `x=${"a".repeat(n)}`) },
  );
}

const CONTENT_TYPES = [
  "application/x-www-form-urlencoded",
  "application/x-www-form-urlencoded; charset=utf-8",
  "APPLICATION/X-WWW-FORM-URLENCODED",
  "application/json",
  "application/json; charset=utf-16",
  "application/jwt+json",
  "text/plain",
  "text/html",
  "multipart/form-data; boundary=xyz",
  "application/xml",
  "application/proto",
  "application/grpc",
  "application/octet-stream",
  "",
  ";",
  "application/json; application/x-www-form-urlencoded",
];

export function contentTypeArb(): fc.Arbitrary<string | undefined> {
  return fc.oneof(fc.constantFrom(...CONTENT_TYPES), fc.constant(undefined), hostileString());
}

/** A JSON value shaped like the parameters, or not shaped at all. */
function jsonBodyArb(params: fc.Arbitrary<Param[]>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: params.map((ps) => JSON.stringify(Object.fromEntries(ps))) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(params, fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 3 }))
        .map(([ps, values]) => JSON.stringify(Object.fromEntries([...ps.map(([k]) => k), "x"].map((k, i) => [k, values[i % Math.max(values.length, 1)] ?? null])))),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.constantFrom("{", "{\"a\":", "[1,2", "{\"a\":\"\\u00\"}", "{\"__proto__\":{\"x\":1}}", "null", "1e999", "\"\\ud800\"", "{\"a\":1,\"a\":2}") },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 2000 }).map((n) => "[".repeat(n) + "]".repeat(n)) },
  );
}

/** A request body: form, JSON, raw bytes, cut short, or far too large. */
export function bodyArb(params: fc.Arbitrary<Param[]>, maxBodyBytes: number): fc.Arbitrary<Uint8Array> {
  const utf8 = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));
  const whole = fc.oneof(
    { weight: 5, arbitrary: params.map((ps) => utf8(form(ps))) },
    { weight: 4, arbitrary: jsonBodyArb(params).map(utf8) },
    { weight: 1, arbitrary: fc.constantFrom("a=%zz&b=%", "a=%E2%82&b=1", "&&&", "=", "a=1&a=2", "\u0000=\u0000").map(utf8) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 512 }) },
  );
  return fc.oneof(
    { weight: 8, arbitrary: whole },
    // Cut anywhere, even inside a multi-byte character or an escape.
    { weight: 2, arbitrary: whole.chain((b) => fc.nat({ max: b.length }).map((n) => b.subarray(0, n))) },
    { weight: 1, arbitrary: fc.integer({ min: maxBodyBytes + 1, max: maxBodyBytes * 2 }).map((n) => new Uint8Array(n).fill(0x61)) },
  );
}

/** Headers that are not the point of the endpoint: noise, duplicates, oversize. */
export function extraHeadersArb(known: KnownValues): fc.Arbitrary<Array<[string, string]>> {
  const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);
  const noise: fc.Arbitrary<[string, string]> = fc.oneof(
    fc.tuple(token, hostileString(known).map(oneLine)),
    fc.tuple(fc.constantFrom("cookie"), cookieArb(known)),
    fc.tuple(fc.constantFrom("x-forwarded-for", "forwarded", "x-real-ip"), fc.constantFrom("1.2.3.4", "::1, 10.0.0.1", "for=evil", "\u0000", "")),
    fc.tuple(fc.constantFrom("accept", "accept-encoding", "content-encoding", "expect", "te", "upgrade"), fc.constantFrom("*/*", "gzip", "br", "identity", "100-continue", "trailers", "h2c", "websocket", "x")),
    fc.tuple(fc.constantFrom("content-length"), fc.constantFrom("abc", "-1", "1, 2", "99999999999999999999")),
    fc.tuple(fc.constantFrom("transfer-encoding"), fc.constantFrom("gzip", "chunked, gzip", "identity")),
  );
  return fc.oneof(
    { weight: 8, arbitrary: fc.array(noise, { maxLength: 4 }) },
    // One header over the default 16 KiB limit, or many small ones.
    { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 40_000 }).map((n): Array<[string, string]> => [["x-big", "b".repeat(n)]]) },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 400 }).map((n) => Array.from({ length: n }, (_, i): [string, string] => [`x-h${i}`, "v"])) },
    // Header injection: the value carries its own CRLF.
    { weight: 1, arbitrary: fc.constantFrom<Array<[string, string]>>([["x-a", "1\r\nx-b: 2"]], [["x-a", "1\r\n\r\nGET / HTTP/1.1"]], [["x-a", "1\nx-b: 2"]]) },
  );
}

function cookieArb(known: KnownValues): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(`identity_session=${known.sessionCookie}; identity_csrf=${known.csrfToken}`),
    fc.constant(`identity_csrf=${known.csrfToken}`),
    hostileString(known).map((v) => `identity_session=${oneLine(v)}`),
    hostileString(known).map((v) => `identity_csrf=${oneLine(v)}`),
    hostileString(known).map(oneLine),
  );
}

/** Header values stay on one line unless a case means otherwise. */
export const oneLine = (s: string) => s.replace(/[\r\n]/g, " ");

/** What a generated HTTP/1.1 request is made of, before the wire encoding. */
export interface HttpCase {
  method: string;
  path: string;
  query: string;
  contentType?: string;
  authorization?: string;
  body?: Uint8Array;
  extra: Array<[string, string]>;
  /** Half-close after this many body bytes. */
  cut?: number;
  /** HTTP/1.0 without Host. */
  http10?: boolean;
}

export function toWire(c: HttpCase): WireRequest {
  const headers: Array<[string, string]> = [];
  if (c.contentType !== undefined) headers.push(["content-type", oneLine(c.contentType)]);
  if (c.authorization !== undefined) headers.push(["authorization", oneLine(c.authorization)]);
  headers.push(...c.extra);
  const body = c.body ?? new Uint8Array();
  const declaresLength = c.extra.some(([name]) => name === "content-length" || name === "transfer-encoding");
  if (!declaresLength && (body.length > 0 || c.method === "POST")) headers.push(["content-length", String(body.length)]);
  return { method: c.method, target: c.query ? `${c.path}?${c.query}` : c.path, headers, body, cutBodyAt: c.cut, http10: c.http10 };
}

/** True in one case out of twenty. */
export const rarely = fc.oneof({ weight: 19, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "PROPFIND", "get", "P\u00d6ST"];

/**
 * Requests for one path: mostly its own method and parameters, with every
 * kind of damage the issue lists.
 */
export function httpCaseArb(
  path: fc.Arbitrary<string>,
  methods: readonly string[],
  paramNames: readonly string[],
  known: KnownValues,
  maxBodyBytes: number,
): fc.Arbitrary<HttpCase> {
  const params = paramsArb(paramNames, known);
  return fc
    .record({
      method: fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...methods) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      path,
      query: fc.oneof({ weight: 1, arbitrary: fc.constant("") }, { weight: 1, arbitrary: queryArb(params) }),
      contentType: fc.oneof({ weight: 3, arbitrary: fc.constantFrom("application/x-www-form-urlencoded", "application/json") }, { weight: 2, arbitrary: contentTypeArb() }),
      authorization: fc.option(authorizationValue(known), { freq: 3, nil: undefined }),
      body: fc.option(bodyArb(params, maxBodyBytes), { freq: 4, nil: undefined }),
      extra: extraHeadersArb(known),
      cut: fc.oneof({ weight: 29, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat({ max: 200 }) }),
      http10: rarely,
    })
    .map((c) => ({ ...c, cut: c.cut !== undefined && c.body && c.cut < c.body.length ? c.cut : undefined }));
}
