import type { IncomingHttpHeaders } from "node:http";
import net from "node:net";

/** What a request offers about its origin: the socket it came in on, and its headers. */
export interface RequestSource {
  socket: { remoteAddress?: string };
  headers: IncomingHttpHeaders;
}

/** The client address of a request, or undefined when the socket has none (already closed). */
export type ClientAddressOf = (req: RequestSource) => string | undefined;

// An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
const plain = (address: string) => (address.startsWith("::ffff:") && net.isIPv4(address.slice(7)) ? address.slice(7) : address);

/**
 * Where requests come from, for the per-address brute-force limit. It is the
 * socket's peer address. X-Forwarded-For is believed only when that peer is
 * one of `trustedProxies`: then the client is the right-most entry that is
 * not itself a trusted proxy. Anyone can write the header, so without a
 * trusted proxy in front it would let an attacker pick a fresh address per guess.
 */
export function clientAddressResolver(trustedProxies: readonly string[]): ClientAddressOf {
  const trusted = new Set(trustedProxies.map(plain));
  return (req) => {
    const peer = req.socket.remoteAddress === undefined ? undefined : plain(req.socket.remoteAddress);
    if (peer === undefined || !trusted.has(peer)) return peer;
    const forwarded = ([] as string[]).concat(req.headers["x-forwarded-for"] ?? []).join(",").split(",");
    for (const entry of forwarded.map((e) => plain(e.trim())).reverse()) {
      if (trusted.has(entry)) continue;
      return net.isIP(entry) ? entry : peer;
    }
    return peer;
  };
}
