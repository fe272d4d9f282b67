import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Which addresses the SSRF guard lets a socket reach, and the save-time check of a URL: pure
 * classification, no DNS and no sockets (those are lib/net/safe-fetch.ts).
 */

/**
 * True only for globally routable unicast addresses (IPv4-mapped IPv6 is judged as IPv4).
 * ipaddr.js calls every IPv6 address outside its named special ranges "unicast", including
 * `::/96` (IPv4-compatible, deprecated by RFC 4291: `[::127.0.0.1]`) and the rest of `::/8`,
 * which embed an IPv4 address a host or a translator may reach. Global unicast IPv6 is 2000::/3
 * (RFC 4291 §2.4); anything outside it is refused, and inside it the special ranges that embed
 * IPv4 (6to4, Teredo) were already not "unicast".
 */
export function isPublicAddress(ip: string): boolean {
  return rangeOf(ip) === "unicast";
}

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");
const IPV4_COMPATIBLE_V6 = ipaddr.IPv6.parseCIDR("::/96");

export function rangeOf(ip: string): string {
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip;
  try {
    if (!ipaddr.isValid(bare)) return "invalid";
    if (!bare.includes(":")) return ipaddr.IPv4.parse(bare).range();
    // Judged in the form a socket uses: ipaddr reads the dotted tail of "::8.8.8.8" as IPv4-mapped
    // (::ffff:8.8.8.8), where the URL parser and the kernel see the IPv4-compatible ::808:808.
    const v6 = ipaddr.IPv6.parse(new URL(`http://[${bare}]/`).hostname.slice(1, -1));
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range();
    const range = v6.range();
    if (range === "unicast" && !v6.match(GLOBAL_UNICAST_V6)) return v6.match(IPV4_COMPATIBLE_V6) ? "ipv4Compatible" : "reserved";
    return range;
  } catch {
    return "invalid";
  }
}

/**
 * Save-time check of a poll/RSS/http URL: an error message, or null when it may be saved.
 * Host names are not resolved here; DNS answers are checked when the URL is fetched.
 */
export function checkUrlForSave(url: string, allowPrivate: boolean): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `invalid URL: ${JSON.stringify(url)}`;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    return `URL scheme must be http or https, not ${u.protocol.replace(/:$/, "")}`;
  }
  if (allowPrivate) return null;
  const host = bareHost(u);
  if (isIP(host)) {
    return isPublicAddress(host) ? null : `refusing private address ${host} (${rangeOf(host)}); set ALLOW_PRIVATE_URLS=true to allow it`;
  }
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) {
    return `refusing ${name}: it is this machine; set ALLOW_PRIVATE_URLS=true to allow it`;
  }
  return null;
}

export function bareHost(u: URL): string {
  const h = u.hostname;
  return h.startsWith("[") ? h.slice(1, -1) : h;
}
