import assert from "node:assert/strict";
import { setImmediate as tick } from "node:timers/promises";
import { adminCaller, type AdminCaller } from "../../src/shared/audit.js";

const caller = (name: string): AdminCaller => ({ actor: { kind: "admin", id: name, name } });

describe("the admin caller of the change under way", () => {
  it("names each call's caller across its awaits, while others run beside it, and the local operator outside any", async () => {
    let releaseA!: () => void;
    const heldA = new Promise<void>((resolve) => (releaseA = resolve));
    const a = adminCaller.run(caller("a"), async () => {
      await heldA;
      return adminCaller.current().actor.name;
    });
    // b starts and ends while a is still under way: a keeps its caller.
    const b = await adminCaller.run(caller("b"), async () => {
      await tick();
      return adminCaller.current().actor.name;
    });
    releaseA();
    assert.deepEqual([await a, b], ["a", "b"]);
    assert.equal(adminCaller.current().actor.name, "local");
  });

  it("gives the caller up when a call throws, at once or later", async () => {
    assert.throws(() => adminCaller.run(caller("c"), () => {
      throw new Error("refused");
    }), /refused/);
    await assert.rejects(adminCaller.run(caller("d"), async () => {
      await tick();
      throw new Error("refused later");
    }), /refused later/);
    assert.equal(adminCaller.current().actor.name, "local");
    assert.equal(await adminCaller.run(caller("e"), async () => adminCaller.current().actor.name), "e", "and runs again after");
  });
});
