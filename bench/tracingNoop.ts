/**
 * The cost of the tracing facade (src/shared/tracing.ts) with no tracer
 * installed, per call: `npx tsx bench/tracingNoop.ts`. A request makes one
 * guard at the request span, one per database statement and one per
 * signature, so a token request pays about ten of these.
 */
import { span, tracing } from "../src/shared/tracing.js";

const work = () => Promise.resolve(1);

async function perCall(n: number, f: () => Promise<number>): Promise<number> {
  for (let i = 0; i < 100_000; i++) await f();
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await f();
  return Number(process.hrtime.bigint() - started) / n;
}

async function main(): Promise<void> {
  const n = 2_000_000;
  for (let round = 1; round <= 3; round++) {
    const direct = await perCall(n, work);
    const unguarded = await perCall(n, () => span("db SELECT", "client", undefined, work));
    const guarded = await perCall(n, () => (tracing() ? span("db SELECT", "client", {}, work) : work()));
    console.log(
      `round ${round}: direct ${direct.toFixed(1)} ns, span() ${unguarded.toFixed(1)} ns (+${(unguarded - direct).toFixed(1)}),` +
        ` tracing() guard ${guarded.toFixed(1)} ns (+${(guarded - direct).toFixed(1)}) per call`,
    );
  }
}

void main();
