import { generateKeyPairSync } from "node:crypto";
import { importJWK, SignJWT } from "jose";

/**
 * The RS256 ceiling of this machine: jose signing (WebCrypto, in the libuv
 * pool) with 16 signatures in flight, claims shaped like our access
 * tokens, for `seconds` after a fifth of that of warm-up, in a process of
 * its own. Prints signatures per second.
 */
const seconds = Number(process.argv[2] ?? 3);
const IN_FLIGHT = 16;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const key = await importJWK({ ...privateKey.export({ format: "jwk" }), alg: "RS256" }, "RS256");
const now = Math.floor(Date.now() / 1000);
const claims = { iss: "http://localhost:8000", sub: "bench-client", aud: "bench-client", azp: "bench-client", client_id: "bench-client", exp: now + 3600, iat: now, nbf: now, jti: "11111111-1111-4111-8111-111111111111", scope: "" };
const sign = () => new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "k", typ: "at+jwt" }).sign(key);

async function rate(ms: number): Promise<number> {
  let done = 0;
  const started = performance.now();
  const lane = async () => {
    for (; performance.now() - started < ms; done++) await sign();
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return done / ((performance.now() - started) / 1000);
}

await rate(seconds * 200);
process.stdout.write(`${await rate(seconds * 1000)}\n`);
