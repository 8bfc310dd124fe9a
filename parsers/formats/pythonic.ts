/**
 * Pythonic (Llama 3.2 / 4, some others): [get_weather(city="Paris", days=3), now()] with
 * Python literals. Read when the WHOLE output (modulo whitespace) is the list, when the list
 * is wrapped in <|python_start|>…<|python_end|> (or ends the output after <|python_start|>), when the list ENDS the output after prose
 * ("Let me check: [get_weather(…)]", SGLang's pythonic detector reads it too), or when it
 * starts the output and a new sentence follows it ("[get_weather(…)] Here is the forecast:").
 * A list inside a sentence ("Try [get_weather(…)] next time.") stays prose.
 * Also calls written inside a `<tool_call>` tag without the list brackets
 * (`<tool_call>get_weather(city="NYC")</tool_call>`, SGLang's multi-format `python` dialect);
 * hermes, glm and qwen3-coder share that tag and refuse a name followed by `(`.
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import { announces } from '../engine/lead-in.js';
import { gated } from '../kit/improvised-call.js';
import { isPlainObject } from '../kit/lenient-json.js';
import type { ParseContext } from '../types.js';
import { closedEnvelope, peekNonWs } from '../kit/envelope.js';
import { readName, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { parsePythonCallList } from '../kit/python-literal.js';

const START = '<|python_start|>';
const END = '<|python_end|>';
/** A list after prose. */
const LIST = '[';
/** A list candidate only follows the start, whitespace or a colon (never `x[f(1)]` code). */
const BEFORE_LIST = /[\s:]/;
/** List scans stop at the next list candidate, so many unclosed `[f(` cost one pass in all. */
const NEXT_LIST = [' [', '\n[', '\t['];
const NEW_SENTENCE = /^\p{Lu}$/u;

function read(body: string): EnvelopeMatch | null {
  const calls = parsePythonCallList(body);
  if (!calls) return null;
  return { end: 0, calls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) };
}

/**
 * `[name(` after prose: a call list only if it closes and nothing but whitespace follows it to
 * the end of output, so this waits for the end (only such lists are held; `[link](…)` or `[1]`
 * is decided at its second word). Not a call list: plain text, no leak.
 */
function listEndingOutput(text: string, j: number, final: boolean): MatchResult {
  if (j > 0 && !BEFORE_LIST.test(text[j - 1] ?? '')) return null;
  const name = readName(text, j + 1);
  const k = j + 1 + name.length;
  if (k >= text.length) return final ? null : 'need-more';
  if (name === '' || text[k] !== '(') return null;
  const scan = scanJsonValue(text, j, { singleQuotes: true, stopAt: NEXT_LIST });
  if (scan?.stoppedAt !== undefined) return null;
  if (!scan || scan.end < 0) return final ? null : 'need-more';
  if (skipWs(text, scan.end) < text.length) return null;
  if (!final) return 'need-more';
  const m = read(text.slice(j, scan.end));
  return m ? { ...m, end: text.length } : null;
}

const TAG_OPEN = '<tool_call>';
const TAG_CLOSE = '</tool_call>';

/** `<tool_call>NAME(`: undecided while the name is still arriving. */
function acceptTagged(text: string, bodyStart: number, final: boolean): 'yes' | 'no' | 'need-more' {
  const j = skipWs(text, bodyStart);
  if (j >= text.length) return final ? 'no' : 'need-more';
  const name = readName(text, j);
  const k = j + name.length;
  if (k >= text.length) return final || name === '' ? 'no' : 'need-more';
  return name !== '' && text[k] === '(' ? 'yes' : 'no';
}

/** The tag holds `f(a=1)` or `f(a=1), g()`: read as the list `[…]` it would be. */
const tagged = closedEnvelope({
  open: TAG_OPEN,
  end: TAG_CLOSE,
  accept: acceptTagged,
  read(body) {
    const calls = parsePythonCallList(`[${body.trim()}]`);
    return calls
      ? { calls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) }
      : { error: 'not a pythonic call' };
  },
});

/** A closed call list at j with nothing but whitespace after it (repair missing-close-tag). */
function wholeListEndingOutput(text: string, j: number): EnvelopeMatch | null {
  const scan = scanJsonValue(text, j, { singleQuotes: true });
  if (!scan || scan.end < 0 || skipWs(text, scan.end) < text.length) return null;
  const m = read(text.slice(j, scan.end));
  if (!m) return null;
  for (const call of m.calls) call.repairs = [...(call.repairs ?? []), 'missing-close-tag'];
  return { ...m, end: text.length };
}

/**
 * The whole output, or a list opening it followed by a new sentence (kept as content). recall15:
 * when that sentence is a short announcing one (`announces`) and a second list on a line of its
 * own ends the output, every call of which names a declared tool whose schema its arguments fit,
 * that list is read too (repair `lead-in`): Llama 3.2 narrating two steps.
 */
function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  const all = read(text);
  if (all) return { ...all, end: text.length };
  const j = skipWs(text, 0);
  const scan = scanJsonValue(text, j, { singleQuotes: true });
  if (!scan || scan.end < 0) return null;
  const k = skipWs(text, scan.end);
  if (k >= text.length) return null;
  if (!text.slice(scan.end, k).includes('\n') && !NEW_SENTENCE.test(text[k] ?? '')) return null;
  const m = read(text.slice(j, scan.end));
  if (!m) return null;
  const at = text.indexOf('\n[', k);
  const lead = at < 0 ? '' : text.slice(k, at);
  const second = at < 0 || !announces(lead, ctx) ? null : scanJsonValue(text, at + 1, { singleQuotes: true });
  const more =
    second && second.end >= 0 && skipWs(text, second.end) >= text.length
      ? read(text.slice(at + 1, second.end))
      : null;
  if (
    more?.calls.every(
      (c) => isPlainObject(c.arguments) && gated({ name: c.name, args: c.arguments }, ctx.tools),
    )
  )
    return {
      end: text.length,
      calls: [...m.calls, ...more.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'lead-in'] }))],
      content: lead.trimEnd(),
    };
  return { ...m, end: text.length, content: text.slice(k) };
}

export const pythonic = defineFamily({
  name: 'pythonic',
  markers: [START, LIST, TAG_OPEN],
  priority: 31,
  backend: { vllm: 'pythonic', llamacpp: 'Llama 3.x (builtin tools)', sglang: 'pythonic' },
  match(input): MatchResult {
    const { text, start, marker, final, find } = input;
    if (marker === LIST) return listEndingOutput(text, start, final);
    if (marker === TAG_OPEN) return tagged(input);
    const j = peekNonWs(text, start + marker.length, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end' || text[j] !== '[') return null;
    const close = find(END, j);
    if (close < 0) {
      if (!final) return 'need-more';
      // Llama 4 often stops at <|eom|> without <|python_end|>: a whole call list that ends the
      // output is the call (vLLM's llama4_pythonic reads it); anything else after it is not
      const m = wholeListEndingOutput(text, j);
      return m ?? { end: text.length, calls: [], error: 'unclosed python_start', truncated: true };
    }
    const end = close + END.length;
    const m = read(text.slice(j, close));
    return m ? { ...m, end } : { end, calls: [], error: 'not a pythonic call list' };
  },
  wholeStarts: ['['],
  matchWhole,
});
