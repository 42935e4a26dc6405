import { generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { importJWK, SignJWT } from "jose";

/**
 * The RS256 ceiling of this machine, measured in its own process and printed
 * as one JSON line: `jose`, signing through jose (WebCrypto, which runs in
 * the libuv pool) with 16 signs in flight, the client_credentials row's
 * reference, measured in turns with it; or `node:crypto`, its synchronous
 * sign and verify.
 */
const seconds = Number(process.argv[2] ?? 3);
const what = process.argv[3];
if (what !== "jose" && what !== "node:crypto") throw new Error("usage: cryptoCeiling.ts <seconds> <jose|node:crypto>");
const IN_FLIGHT = 16;

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const joseKey = await importJWK({ ...privateKey.export({ format: "jwk" }), alg: "RS256" }, "RS256");
const now = Math.floor(Date.now() / 1000);
// The size and shape of the access tokens the service mints.
const claims = {
  iss: "http://localhost:8000",
  sub: "bench-client",
  aud: "bench-client",
  azp: "bench-client",
  client_id: "bench-client",
  exp: now + 3600,
  iat: now,
  nbf: now,
  jti: "11111111-1111-4111-8111-111111111111",
  scope: "",
};
const signingInput = Buffer.from(`${Buffer.from('{"alg":"RS256","kid":"k","typ":"at+jwt"}').toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`);
const signature = sign("sha256", signingInput, privateKey);

/** Operations per second of `op` over `seconds`, after a warm-up of a fifth of that. */
async function rate(op: () => Promise<unknown> | unknown, inFlight: number): Promise<number> {
  const measure = async (ms: number) => {
    let done = 0;
    const deadline = performance.now() + ms;
    const started = performance.now();
    const lane = async () => {
      while (performance.now() < deadline) {
        await op();
        done++;
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
    return done / ((performance.now() - started) / 1000);
  };
  await measure(seconds * 200);
  return measure(seconds * 1000);
}

const syncLoop = (fn: () => unknown) => () => {
  // A batch per turn keeps the loop from measuring promise overhead.
  for (let i = 0; i < 100; i++) fn();
};

const result =
  what === "jose"
    ? { joseSign16: await rate(() => new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "k", typ: "at+jwt" }).sign(joseKey), IN_FLIGHT) }
    : {
        cryptoSyncSign: (await rate(syncLoop(() => sign("sha256", signingInput, privateKey as KeyObject)), 1)) * 100,
        cryptoVerify: (await rate(syncLoop(() => verify("sha256", signingInput, publicKey, signature)), 1)) * 100,
      };
process.stdout.write(`${JSON.stringify(result)}\n`);
