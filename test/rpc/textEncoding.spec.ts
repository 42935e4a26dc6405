import assert from "node:assert/strict";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { IntrospectRequestSchema } from "../../gen/identity/v1/introspection_pb.js";
import { useBufferTextEncoding } from "../../src/rpc/textEncoding.js";

describe("protobuf strings through Buffer", () => {
  const samples = ["", "plain ascii", "é and ü", "日本語", "emoji 😀", "a lone \uD800 surrogate", "\uDC00 trailing"];

  it("encodes and decodes every string as TextEncoder and TextDecoder do", () => {
    useBufferTextEncoding();
    const encoder = new TextEncoder();
    const decoder = new TextDecoder();
    const { encodeUtf8, decodeUtf8 } = getTextEncoding();
    for (const text of samples) {
      assert.deepEqual(Buffer.from(encodeUtf8(text)), Buffer.from(encoder.encode(text)), text);
      const bytes = encoder.encode(text);
      assert.equal(decodeUtf8(bytes), decoder.decode(bytes), text);
    }
    const invalid = new Uint8Array([0x61, 0xff, 0xc3, 0x62]);
    assert.equal(decodeUtf8(invalid), decoder.decode(invalid));
    assert.throws(() => decodeUtf8(invalid, true));
  });

  it("round-trips messages, reading strings out of a larger buffer at an offset", () => {
    useBufferTextEncoding();
    for (const token of samples) {
      const bytes = toBinary(IntrospectRequestSchema, create(IntrospectRequestSchema, { token, tokenTypeHint: "access_token" }));
      const framed = new Uint8Array(bytes.length + 7);
      framed.set(bytes, 7);
      const back = fromBinary(IntrospectRequestSchema, framed.subarray(7));
      assert.equal(back.token, new TextDecoder().decode(new TextEncoder().encode(token))); // lone surrogates become U+FFFD
      assert.equal(back.tokenTypeHint, "access_token");
    }
  });
});
