/**
 * HyperCLOVAX-SEED-Think (vLLM `hyperclovax_seed_think`, `hyperclovax_seed_think_14b`).
 *
 * The 14B model switches the assistant turn to a tool call with a header, then a JSON array of
 * calls, then the end-of-turn token:
 *   <|im_start|>assistant -> tool/function_call\n[{"name": …, "arguments"|"parameters": {…}}]<|im_end|>
 *
 * The later model writes GLM's layout, but every value JSON-encoded (a string arrives quoted):
 *   <tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>"Seoul"</arg_value>\n</tool_call>
 * GLM (glm.ts) keeps a value declared a string verbatim, quotes included. This family claims
 * the block first, only when every value is a complete JSON value and at least one is a JSON
 * string: GLM's template writes strings raw, so a block made only of JSON is this dialect.
 * Anything else (a raw value, an unclosed block) is left to GLM. A bare JSON array of calls is
 * json.ts's.
 *
 * `<|im_end|>` written out is the end-of-turn token leaking as text: removed at the very end of
 * output and right before the tool-call turn's role header (prose, then
 * `<|im_end|>\n<|im_start|>assistant -> tool/function_call\n[…]`: the prose is the content);
 * kept anywhere else (quoted prose).
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { readName, skipWs } from '../kit/json-scan.js';
import { taggedAt } from '../kit/key-value-calls.js';
import { matchJsonAfter, trailingControlToken } from '../kit/long-tail.js';
import { coerceParamValue, createArgs, paramSchema } from '../kit/schema-values.js';
import type { ParseContext, ParsedCall } from '../types.js';

const HEADER = '-> tool/function_call\n';
/** The header with its role: the turn before it (prose) ended with END_OF_TURN. */
const ROLE_HEADER = `<|im_start|>assistant ${HEADER}`;
const END_OF_TURN = '<|im_end|>';
const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';
const KEY = ['<arg_key>', '</arg_key>'] as const;
const VALUE = ['<arg_value>', '</arg_value>'] as const;

function decodeJson(raw: string): { value: unknown } | null {
  try {
    return { value: JSON.parse(raw) };
  } catch {
    return null;
  }
}

/** A GLM-shaped call whose values are all JSON with at least one string; else null (GLM's). */
function readJsonValuedCall(inner: string, ctx: ParseContext): ParsedCall | null {
  let i = skipWs(inner, 0);
  const name = readName(inner, i);
  if (name === '') return null;
  const after = inner[i + name.length];
  if (after !== '\n' && after !== '\r' && after !== '<') return null;
  const tool = ctx.tools.get(name);
  const args = createArgs();
  let quoted = false;
  i = skipWs(inner, i + name.length);
  while (i < inner.length) {
    const key = taggedAt(inner, i, KEY);
    const value = key && taggedAt(inner, key.next, VALUE);
    if (!key || !value) return null;
    const k = key.text.trim();
    if (k === '' || Object.hasOwn(args, k)) return null;
    const raw = value.text.trim();
    const decoded = decodeJson(raw);
    if (!decoded) return null;
    const schema = paramSchema(tool, k);
    if (typeof decoded.value === 'string') {
      quoted = true;
      args[k] = coerceParamValue(decoded.value, schema);
    } else {
      args[k] = coerceParamValue(raw, schema, { untyped: 'json' });
    }
    i = skipWs(inner, value.next);
  }
  return quoted ? { name, arguments: args } : null;
}

/** `<tool_call>` then a bare name and a newline or a tag (GLM's shape); undecided while short. */
function glmShaped(text: string, bodyStart: number, final: boolean): boolean | 'need-more' {
  const j = skipWs(text, bodyStart);
  const name = j < text.length ? readName(text, j) : '';
  if (j + name.length >= text.length) return final ? false : 'need-more';
  const c = text[j + name.length];
  return name !== '' && (c === '\n' || c === '\r' || c === '<');
}

function matchJsonValued({ text, start, marker, final, ctx, find }: MatchInput): MatchResult {
  const bodyStart = start + marker.length;
  // decide prose (`<tool_call> tags are…`) at once instead of holding it until a close or the end
  const shaped = glmShaped(text, bodyStart, final);
  if (shaped !== true) return shaped === 'need-more' ? 'need-more' : null;
  const closeAt = find(CALL_CLOSE, bodyStart);
  if (closeAt < 0) return final ? null : 'need-more';
  const call = readJsonValuedCall(text.slice(bodyStart, closeAt), ctx);
  return call ? { end: closeAt + CALL_CLOSE.length, calls: [call] } : null;
}

/** `<|im_end|>` ending the output, or the prose turn before a tool-call turn; else text. */
function matchEndOfTurn(input: MatchInput): MatchResult {
  const { text, start, marker, final } = input;
  const j = skipWs(text, start + marker.length);
  if (text.startsWith(ROLE_HEADER, j)) return { end: start + marker.length, calls: [], control: true };
  if (!final && j < text.length && ROLE_HEADER.startsWith(text.slice(j))) return 'need-more';
  return trailingControlToken(input);
}

export const hyperclovax = defineFamily({
  name: 'hyperclovax',
  markers: [ROLE_HEADER, HEADER, END_OF_TURN, CALL_OPEN],
  // after qwen3-coder (21: `<tool_call><function=`), before GLM (22), which reads the same layout
  priority: 21.5,
  backend: { vllm: 'hyperclovax_seed_think' },
  match(input): MatchResult {
    if (input.marker === END_OF_TURN) return matchEndOfTurn(input);
    if (input.marker === CALL_OPEN) return matchJsonValued(input);
    return matchJsonAfter(input, { opens: '[{', closer: END_OF_TURN });
  },
});
