import assert from "node:assert/strict";
import { SecretBox, SecretBoxError } from "../../src/federation/secretBox.js";

const KEY = "0123456789abcdef0123456789abcdef-key-one";
const OTHER_KEY = "0123456789abcdef0123456789abcdef-key-two";

describe("SecretBox (provider secrets at rest)", () => {
  const box = new SecretBox(KEY);

  it("seals with a fresh IV every time, and opens what it sealed", () => {
    const first = box.seal("client secret ✓", "provider/acme");
    const second = box.seal("client secret ✓", "provider/acme");
    assert.notEqual(first, second);
    assert.ok(SecretBox.isSealed(first));
    assert.ok(!first.includes("client secret"));
    assert.equal(box.open(first, "provider/acme"), "client secret ✓");
    assert.equal(box.open(second, "provider/acme"), "client secret ✓");
  });

  it("refuses another row's value, another key and altered data", () => {
    const sealed = box.seal("s3cret", "provider/acme");
    assert.throws(() => box.open(sealed, "provider/other"), SecretBoxError);
    assert.throws(() => new SecretBox(OTHER_KEY).open(sealed, "provider/acme"), /does not decrypt with this IDENTITY_SECRET_KEY/);
    const bytes = Buffer.from(sealed.slice("aes256gcm:v1:".length), "base64url");
    bytes[bytes.length - 20]! ^= 1;
    assert.throws(() => box.open(`aes256gcm:v1:${bytes.toString("base64url")}`, "provider/acme"), SecretBoxError);
    assert.throws(() => box.open("aes256gcm:v1:AAAA", "provider/acme"), /damaged/);
  });

  it("without a key stores values as given, and cannot open sealed ones", () => {
    const plain = new SecretBox(undefined);
    assert.equal(plain.encrypting, false);
    assert.equal(plain.seal("as given", "provider/acme"), "as given");
    assert.equal(plain.open("as given", "provider/acme"), "as given");
    assert.throws(() => plain.open(box.seal("x", "provider/acme"), "provider/acme"), /IDENTITY_SECRET_KEY is not set/);
    assert.equal(box.open("stored before the key was set", "provider/acme"), "stored before the key was set");
  });

  it("refuses a short key", () => {
    assert.throws(() => new SecretBox("too short"), /at least 32 characters/);
  });
});
