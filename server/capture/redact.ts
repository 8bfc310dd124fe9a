/**
 * Headers as a capture keeps them: credentials never. A header that carries a key, a token, a
 * cookie or a password is kept by name only, its value replaced; the rest is cut short.
 */
// Any name with `key` or `auth` in it (Azure API Management's ocp-apim-subscription-key, x-auth,
// x-access-key, authentication): a header needlessly redacted costs a diagnosis detail, one kept
// leaks a credential into every inspector reader's view.
const SECRET = /auth|key|cookie|token|secret|passw|credential|signature|^x-amz-|^proxy-/i;
const MAX_HEADERS = 64;
const MAX_VALUE_CHARS = 512;
export const REDACTED = '[redacted]';
/**
 * Whether a header name is secret, by name: clients send the same few names on every request,
 * so the pattern runs once per name. Bounded: past this many names each one is tested afresh.
 */
const NAME_CACHE_MAX = 512;
const secretByName = new Map<string, boolean>();

function isSecret(name: string): boolean {
  const hit = secretByName.get(name);
  if (hit !== undefined) return hit;
  const secret = SECRET.test(name);
  if (secretByName.size < NAME_CACHE_MAX) secretByName.set(name, secret);
  return secret;
}

/**
 * The headers without credentials as one text (read as HeaderText, capture/ring.ts), and the characters of their
 * JSON, about.
 */
export function redactedHeaderText(headers: Record<string, string | string[] | undefined>): {
  text: string;
  chars: number;
} {
  const pairs: string[] = [];
  const chars = redactedHeaderPairs(headers, pairs);
  let text = '';
  for (const s of pairs) text += `${s}\u0000`;
  return { text, chars };
}

/**
 * The headers without credentials, as names and values in turn into `out` (emptied first: a
 * caller's scratch array, which it empties again once written; no string is built of them);
 * returns the characters of their JSON, about. A secret header's value is REDACTED here, before
 * anything of it is kept.
 */
export function redactedHeaderPairs(
  headers: Record<string, string | string[] | undefined>,
  out: string[],
): number {
  out.length = 0;
  let n = 0;
  let chars = 2;
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (++n > MAX_HEADERS) break;
    const kept = keptValue(name, value);
    out.push(name, kept);
    chars += name.length + kept.length + 6;
  }
  return chars;
}

function keptValue(name: string, value: string | string[]): string {
  // A NUL would split the text: none can come from node's parser, one from a caller is cut there.
  const v = isSecret(name)
    ? REDACTED
    : typeof value === 'string'
      ? value.length > MAX_VALUE_CHARS
        ? value.slice(0, MAX_VALUE_CHARS)
        : value
      : (Array.isArray(value) ? value.join(', ') : String(value)).slice(0, MAX_VALUE_CHARS);
  const nul = v.indexOf('\u0000');
  return nul === -1 ? v : v.slice(0, nul);
}
