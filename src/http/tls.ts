import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import tls from "node:tls";

/** Where the port's certificate chain and private key live (PEM). */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** A certificate chain and its private key, checked to belong together. */
export interface KeyPair {
  cert: Buffer;
  key: Buffer;
  /** The leaf certificate, for log lines and tests: serial, SHA-256 fingerprint, expiry. */
  leaf: { serialNumber: string; fingerprint256: string; validTo: string; subject: string };
}

/** How often the files are read for a change: a new pair serves new connections within this (plus a read). */
export const DEFAULT_TLS_RELOAD_MS = 3000;

/**
 * Reads both files and checks them the way the TLS server will use them
 * (a PEM chain, a key, and the key matching the leaf). The error names the
 * files, not their contents.
 */
export async function readKeyPair(files: TlsFiles): Promise<KeyPair> {
  const { cert, key } = await readPems(files);
  return checkKeyPair(files, cert, key);
}

function readPems(files: TlsFiles): Promise<{ cert: Buffer; key: Buffer }> {
  return Promise.all([readPem(files.certFile, "certificate"), readPem(files.keyFile, "private key")]).then(([cert, key]) => ({ cert, key }));
}

function checkKeyPair(files: TlsFiles, cert: Buffer, key: Buffer): KeyPair {
  try {
    tls.createSecureContext({ cert, key });
    const leaf = new X509Certificate(cert);
    return {
      cert,
      key,
      leaf: { serialNumber: leaf.serialNumber, fingerprint256: leaf.fingerprint256, validTo: leaf.validTo, subject: leaf.subject },
    };
  } catch (err) {
    throw new Error(`TLS certificate ${files.certFile} and key ${files.keyFile} are unusable: ${(err as Error).message}`);
  }
}

async function readPem(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new Error(`cannot read the TLS ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export interface KeyPairWatch {
  stop(): void;
}

/**
 * Re-reads both files every `intervalMs` and calls `onChange` with a new
 * pair once their contents differ from the pair in use and check out. A pair
 * that does not (a key not matching its certificate, a half-written file, a
 * file missing while it is replaced) goes to `onError` once per distinct
 * content, and the pair in use stays; the next change is tried again.
 * Contents rather than modification times are compared: two small reads per
 * interval, and no file system's time granularity to miss a quick swap.
 */
export function watchKeyPair(
  files: TlsFiles,
  current: KeyPair,
  intervalMs: number,
  onChange: (pair: KeyPair) => void,
  onError: (err: Error) => void,
): KeyPairWatch {
  let seen = { cert: current.cert, key: current.key };
  let busy = false;
  const poll = async () => {
    if (busy) return;
    busy = true;
    try {
      let cert: Buffer;
      let key: Buffer;
      try {
        ({ cert, key } = await readPems(files));
      } catch (err) {
        if (seen.cert.length > 0) onError(err as Error); // once, until the files are back
        seen = { cert: Buffer.alloc(0), key: Buffer.alloc(0) };
        return;
      }
      if (cert.equals(seen.cert) && key.equals(seen.key)) return;
      seen = { cert, key };
      let pair: KeyPair;
      try {
        pair = checkKeyPair(files, cert, key);
      } catch (err) {
        onError(err as Error);
        return;
      }
      onChange(pair);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void poll(), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
