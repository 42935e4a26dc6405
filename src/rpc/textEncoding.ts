import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

let configured = false;

/**
 * Protobuf strings converted through Buffer rather than TextEncoder and
 * TextDecoder, for the whole process. On Node 20 `TextEncoder.encode` makes
 * a new ArrayBuffer for every string, about 500 ns for a short one, against
 * about 150 ns for `Buffer.from`, which slices small strings from a shared
 * pool; protobuf-es's default was 3.8% of a gRPC introspection's CPU. Both
 * write a lone surrogate as U+FFFD, and both decoders substitute it for
 * invalid UTF-8; strict decoding and the UTF-8 check stay protobuf-es's own.
 */
export function useBufferTextEncoding(): void {
  if (configured) return; // each server start calls this; wrapping our own would chain the delegations
  configured = true;
  const standard = getTextEncoding();
  configureTextEncoding({
    encodeUtf8: (text) => Buffer.from(text, "utf8"),
    decodeUtf8: (bytes, strict) =>
      strict ? standard.decodeUtf8(bytes, true) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"),
    checkUtf8: standard.checkUtf8,
  });
}
