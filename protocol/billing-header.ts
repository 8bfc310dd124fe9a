/**
 * Claude Code (2.1.36 on) opens its system prompt with a block such as
 * `x-anthropic-billing-header: cc_version=2.1.177.01c; cc_entrypoint=cli; cch=36ee5;`, whose
 * `cch` value changes on every request. A self-hosted backend reuses its KV cache only for an
 * unchanged prompt prefix, so that nonce alone makes it prefill the whole conversation again on
 * every turn (anthropics/claude-code#68900). The nonce is replaced by a constant of the same
 * length; the rest of the block (version, entrypoint) stays as the client wrote it. Pure.
 */
const PREFIX = 'x-anthropic-billing-header:';
/** The header line is short; nothing past this many characters is looked at. */
const MAX_LINE = 1024;

export function stripBillingNonce(text: string): string {
  if (!text.startsWith(PREFIX)) return text;
  const newline = text.indexOf('\n');
  const end = Math.min(newline < 0 ? text.length : newline, MAX_LINE);
  const at = text.lastIndexOf('cch=', end);
  if (at < PREFIX.length) return text;
  const from = at + 4;
  let to = from;
  while (to < end && /[0-9A-Za-z]/.test(text[to]!)) to++;
  if (to === from) return text;
  return text.slice(0, from) + '0'.repeat(to - from) + text.slice(to);
}
