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
  let text = '';
  let n = 0;
  let chars = 2;
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (++n > MAX_HEADERS) break;
    const kept = keptValue(name, value);
    text += `${name}\u0000${kept}\u0000`;
    chars += name.length + kept.length + 6;
  }
  return { text, chars };
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
