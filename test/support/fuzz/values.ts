import fc from "fast-check";

/**
 * Values the server knows, gathered before fuzzing, so that generated
 * requests reach past the first check (client authentication, the CSRF
 * token, a live token) instead of all failing at the door.
 */
export interface KnownValues {
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
  redirectUri: string;
  accessToken: string;
  refreshToken: string;
  idToken: string;
  clientToken: string;
  code: string;
  sessionCookie: string;
  csrfToken: string;
  pendingRequest: string;
  adminToken: string;
}

/** Strings that have broken parsers, templates, SQL, logs and HTML before. */
const NASTY = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "%00",
  "%",
  "%zz",
  "%E2%82",
  "\uD800",
  "\uDFFF\uD800",
  "\uFEFF",
  "\u202E",
  "\r\n",
  "\r\nset-cookie: x=1",
  "<script>alert(1)</script>",
  "\"><img src=x onerror=alert(1)>",
  "' onmouseover='alert(1)",
  "javascript:alert(1)",
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  "\\",
  "${7*7}",
  "{{7*7}}",
  "../../../../etc/passwd",
  "__proto__",
  "constructor",
  "toString",
  "null",
  "undefined",
  "true",
  "-1",
  "1e309",
  "9007199254740993",
  "NaN",
  "[]",
  "{}",
  "Bearer",
  "Basic",
  "=",
  "&",
  "+",
  "a=b&c=d",
  "😀",
  "Ω≈ç√∫",
  "ﷺ",
  "𝕿𝖍𝖊",
  "e\u0301",
];

/** Any string a hostile client may send, with the server's own values mixed in. */
export function hostileString(known?: KnownValues): fc.Arbitrary<string> {
  const own = known ? Object.values(known).filter((v) => v.length > 0) : [];
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
    { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...NASTY), fc.string({ maxLength: 8 })).map(([a, b]) => a + b) },
    // Long enough to matter, short enough to fit a 64 KiB body.
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom("a", "%", "é", "\u0000", "😀", "<"), fc.integer({ min: 256, max: 6000 })).map(([c, n]) => c.repeat(n)) },
    ...(own.length ? [{ weight: 4, arbitrary: fc.constantFrom(...own) }] : []),
  );
}

const SCOPES = ["openid", "profile", "email", "address", "phone", "offline_access", "admin", "OPENID", ""];

/** Scope values: real ones in odd company, separators that are not a space, absurd lengths. */
export function scopeValue(known?: KnownValues): fc.Arbitrary<string> {
  return fc.oneof(
    fc.tuple(fc.array(fc.constantFrom(...SCOPES), { maxLength: 8 }), fc.constantFrom(" ", "  ", "+", "%20", "\t", ",", "\u00a0", "\u0000")).map(
      ([scopes, sep]) => scopes.join(sep),
    ),
    fc.integer({ min: 100, max: 4000 }).map((n) => "openid ".repeat(n)),
    hostileString(known),
  );
}

/** redirect_uri values: the registered one, near misses and far misses. */
export function redirectUriValue(known?: KnownValues): fc.Arbitrary<string> {
  const registered = known?.redirectUri ?? "http://127.0.0.1:9999/callback";
  return fc.oneof(
    fc.constant(registered),
    fc.constantFrom(
      `${registered}/`,
      `${registered}?x=1`,
      `${registered}#frag`,
      registered.replace("127.0.0.1", "localhost"),
      registered.replace("http://", "https://"),
      registered.replace(":9999", ":1"),
      registered.replace("http://", "http://evil@"),
      registered.replace("/callback", "/callback/../evil"),
      registered.toUpperCase(),
      "http://evil.example/callback",
      "//evil.example/callback",
      "javascript:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "http://[::1]:9999/callback",
      "http://127.0.0.1:99999/callback",
      "http://xn--80ak6aa92e.com/",
      "http://ex\u0000ample.com/",
      "file:///etc/passwd",
      "http://127.0.0.1:9999/callback\r\nlocation: http://evil.example",
    ),
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
    hostileString(known),
  );
}

/** RFC 6749 §2.3.1 encoding of a Basic half; any string, lone surrogates included. */
const formEncode = (s: string) => new URLSearchParams([["", s]]).toString().slice(1);

/** Authorization header values, most of them broken. */
export function authorizationValue(known?: KnownValues): fc.Arbitrary<string> {
  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
  const pair = fc.tuple(hostileString(known), hostileString(known));
  return fc.oneof(
    pair.map(([id, secret]) => `Basic ${b64(`${formEncode(id)}:${formEncode(secret)}`)}`),
    pair.map(([id, secret]) => `Basic ${b64(`${id}:${secret}`)}`),
    ...(known ? [fc.constant(`Basic ${b64(`${known.clientId}:${known.clientSecret}`)}`)] : []),
    fc.constantFrom("Basic", "Basic ", "Basic !!!!", "Basic abc", "Basic ====", "Basic YWJj", "Basic Og==", "Basic JXp6OiV6eg==", "basic   Y2xpZW50LTE6c2VjcmV0LTE="),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => `Basic ${Buffer.from(bytes).toString("base64")}`),
    hostileString(known).map((s) => `Basic ${s}`),
    hostileString(known).map((s) => `Bearer ${s}`),
    ...(known ? [fc.constantFrom(`Bearer ${known.accessToken}`, `Bearer ${known.clientToken}`, `Bearer ${known.adminToken}`, `bearer   ${known.accessToken}`)] : []),
    hostileString(known),
  );
}
