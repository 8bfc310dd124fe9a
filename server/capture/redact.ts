/**
 * Headers as a capture keeps them: credentials never. A header that carries a key, a token, a
 * cookie or a password is kept by name only, its value replaced; the rest is cut short.
 */
const SECRET = /authorization|api[-_]?key|cookie|token|secret|password|credential|signature|^x-amz-|^proxy-/i;
const MAX_HEADERS = 64;
const MAX_VALUE_CHARS = 512;
export const REDACTED = '[redacted]';

export function redactHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (++n > MAX_HEADERS) break;
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    out[name] = SECRET.test(name) ? REDACTED : text.slice(0, MAX_VALUE_CHARS);
  }
  return out;
}
