import { BlockList, isIP } from "node:net";

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether a URL's host is this machine (http is allowed there: a provider on the same host). */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  if (LOOPBACK_NAMES.has(host) || host.endsWith(".localhost")) return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

export const INSECURE_URL_PROBLEM = "must use https (http only on loopback addresses, or with allowInsecureUrls: true)";

/** The https rule for a URL the service calls or sends the browser to; undefined when it passes. */
export function insecureUrlProblem(value: string, allowInsecureUrls: boolean): string | undefined {
  if (allowInsecureUrls) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol === "https:") return undefined;
  return url.protocol === "http:" && isLoopback(url) ? undefined : INSECURE_URL_PROBLEM;
}

/**
 * Addresses that are not on the public internet: this machine, private
 * networks (RFC 1918, RFC 4193), link-local (cloud metadata at
 * 169.254.169.254), carrier-grade NAT, and the reserved, documentation and
 * multicast ranges (RFC 6890). IPv4-mapped IPv6 addresses are matched as IPv4.
 */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12], ["192.0.0.0", 24],
  ["192.0.2.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24], ["203.0.113.0", 24], ["224.0.0.0", 3],
] as const) NOT_PUBLIC.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of [
  ["::", 96], ["100::", 64], ["2001:db8::", 32], ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8],
] as const) NOT_PUBLIC.addSubnet(network, prefix, "ipv6");

/** Whether an IP address is on the public internet (NAT64 and 6to4 addresses are judged by the IPv4 address they carry). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !NOT_PUBLIC.check(address, "ipv4");
  if (family !== 6) return false;
  if (NOT_PUBLIC.check(address, "ipv6")) return false;
  const embedded = embeddedIpv4(address);
  return embedded === undefined || isPublicAddress(embedded);
}

/** The IPv4 address inside a NAT64 (64:ff9b::/96, RFC 6052) or 6to4 (2002::/16, RFC 3056) address. */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  const v4 = (high: number, low: number) => [high >> 8, high & 255, low >> 8, low & 255].join(".");
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  return undefined;
}

/** An IPv6 address as its eight 16-bit groups (a trailing dotted IPv4 part included). */
function expandIpv6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const front = parse(head);
  const back = parse(tail);
  return tail === undefined ? front : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The host of a URL that, written as it is, names a place off the public internet (an address literal or localhost). */
export function namesPrivateHost(url: URL): boolean {
  const host = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return isIP(host) !== 0 && !isPublicAddress(host);
}

export const PRIVATE_TARGET_PROBLEM = "targets a loopback, private or link-local address";

/** What the operator configured for a provider, which decides where the URLs its discovery names may lead. */
export interface DiscoveryOwner {
  issuer: string;
  allowInsecureUrls: boolean;
}

/**
 * Whether a URL a provider's discovery document named (not the operator) may
 * reach only public addresses. The operator vouched for the issuer's own
 * origin by configuring it, and for any target with allowInsecureUrls;
 * anywhere else the document could point the service at this machine or its
 * network, which whoever runs the provider must not reach.
 */
export function needsPublicTarget(value: string, owner: DiscoveryOwner): boolean {
  if (owner.allowInsecureUrls) return false;
  try {
    return new URL(value).origin !== new URL(owner.issuer).origin;
  } catch {
    return true;
  }
}

/**
 * The rule for a URL taken from a provider's discovery document: the https
 * rule of every provider URL, and, off the issuer's origin, no host that
 * names a non-public address. Hosts given by name are held to it at connect
 * time, on every address they resolve to (upstream.ts, `publicOnly`).
 */
export function discoveredUrlProblem(value: string, owner: DiscoveryOwner): string | undefined {
  const insecure = insecureUrlProblem(value, owner.allowInsecureUrls);
  if (insecure || !needsPublicTarget(value, owner)) return insecure;
  const url = new URL(value);
  if (namesPrivateHost(url)) return PRIVATE_TARGET_PROBLEM;
  // The https rule let http through on loopback only, which was refused above.
  return url.protocol === "https:" ? undefined : INSECURE_URL_PROBLEM;
}
