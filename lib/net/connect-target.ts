import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isPublicAddress } from "./safe-fetch";

/**
 * The address a non-HTTP client (IMAP, MQTT) connects to, checked as safeFetch checks an HTTP
 * one: a private, loopback or link-local address is refused unless ALLOW_PRIVATE_URLS, every
 * answer of the name is checked, and the client is pinned to the checked address (with the name
 * kept for TLS), so a second lookup cannot swap it for another.
 */
export async function connectTarget(host: string, allowPrivate: boolean, what: string): Promise<{ address: string; servername: string | undefined }> {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (isIP(bare)) {
    if (!allowPrivate && !isPublicAddress(bare)) throw new Error(refusal(what, bare));
    return { address: bare, servername: undefined };
  }
  let answers: { address: string }[];
  try {
    answers = await lookup(bare, { all: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`${what}: cannot resolve ${bare}${code ? ` (${code})` : ""}`, { cause: err });
  }
  if (answers.length === 0) throw new Error(`${what}: ${bare} has no addresses`);
  if (!allowPrivate) {
    for (const a of answers) if (!isPublicAddress(a.address)) throw new Error(refusal(what, `${bare} (${a.address})`));
  }
  return { address: answers[0]!.address, servername: bare };
}

const refusal = (what: string, target: string): string =>
  `${what}: refusing to connect to ${target}: a private, loopback or link-local address (set ALLOW_PRIVATE_URLS=true to allow servers on your own network)`;
