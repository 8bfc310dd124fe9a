/**
 * Reasoning kept across turns for a stateless client. Codex sends `store: false` with
 * `include: ["reasoning.encrypted_content"]` and, on the next turn, sends each reasoning item
 * back with only its `encrypted_content` (it drops `reasoning_text` content when it replays
 * history). toolproof keeps no state, so the "encrypted" content it hands out is the reasoning
 * text itself, base64url-encoded behind a marker: opaque to the client, readable by toolproof
 * on the way back, so the model's past reasoning reaches the template turn after turn. It is
 * not encrypted: anyone holding the item can decode it. Pure.
 */
const PREFIX = 'tp1.';

export function encodeReasoning(text: string): string {
  return PREFIX + Buffer.from(text, 'utf8').toString('base64url');
}

/** The reasoning text of toolproof's own token; undefined for anything else (another server's). */
export function decodeReasoning(token: unknown): string | undefined {
  if (typeof token !== 'string' || !token.startsWith(PREFIX)) return undefined;
  const body = token.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]*$/.test(body)) return undefined;
  return Buffer.from(body, 'base64url').toString('utf8');
}
