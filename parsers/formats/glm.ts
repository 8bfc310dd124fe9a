/**
 * GLM-4.5 / 4.6 / 4.7: <tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>…</tool_call>.
 * Shares <tool_call> with hermes and qwen3-coder: claimed only when a bare name follows.
 * Values are typed by the declared schema; without one, JSON-looking values are decoded (as
 * the GLM template writes non-string values as JSON).
 * IQuest-Coder V2 (vLLM `iquest_coder_v2`) writes the same body in its own call tag, one tag per
 * call: <iquestcoder_tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></iquestcoder_tool_call>.
 * Near miss `missing-arg-key-open` (vllm-project/vllm#47190): the first `<arg_key>` dropped, so
 * the first key runs into the name (`NAMEkey</arg_key>`, or `NAME key</arg_key>` with one blank).
 * Read only when exactly one declared tool's name is a prefix of that run and the rest is one of
 * its declared parameters, and the call then fits the schema. Near miss `json-arguments`: the
 * name, then one JSON object (`<tool_call>NAME\n{"k": "v"}</tool_call>`, GLM-4's older
 * `NAME\n{…}` layout in the newer tags), for a declared tool whose schema it fits.
 * recall9, each for a declared tool whose schema the arguments fit: `doubled-arg-tag` (an
 * `<arg_key>` or `</arg_key>` written twice, vllm-project/vllm#54971), `tool-call-for-arg-key`
 * (`<tool_call>` where the first `<arg_key>` belongs, getsigit/sigit#95), `stray-arg-tag`
 * (`NAME</arg_value>` alone, a call without arguments, fw-ai-external/python-sdk#119). An
 * argument tag inside a key, or inside a value read past a dropped tag, refuses the call
 * (exo-explore/exo#2187 saw such markup passed on as arguments).
 */
import { defineFamily } from '../engine/define.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { delimitedEnvelope } from '../kit/envelope.js';
import { decodeObject, gated } from '../kit/improvised-call.js';
import { readName, skipWs } from '../kit/json-scan.js';
import { coerceParamValue, createArgs, fitsSchema, paramSchema } from '../kit/schema-values.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const K_OPEN = '<arg_key>';
const K_CLOSE = '</arg_key>';
const V_OPEN = '<arg_value>';
const V_CLOSE = '</arg_value>';
const IQUEST_OPEN = '<iquestcoder_tool_call>';
const TAGS = [K_OPEN, K_CLOSE, V_OPEN, V_CLOSE];

/** Does `s` hold one of the argument tags (markup a broken call leaked into a key or a value)? */
const holdsTag = (s: string) => s.includes('<') && TAGS.some((t) => s.includes(t));
const IQUEST_CLOSE = '</iquestcoder_tool_call>';

function accept(text: string, bodyStart: number, final: boolean): 'yes' | 'no' | 'need-more' {
  const j = skipWs(text, bodyStart);
  if (j >= text.length) return final ? 'no' : 'need-more';
  const name = readName(text, j);
  if (name === '') return 'no';
  const after = j + name.length;
  if (after >= text.length) return final ? 'yes' : 'need-more';
  const c = text[after];
  // the template writes NAME then a newline (4.5/4.6) or <arg_key> directly (4.7); prose has a space
  if (c === '\n' || c === '\r' || c === '<') return 'yes';
  // ...except `NAME key</arg_key>`, a call whose first <arg_key> was dropped (vllm#47190)
  if (c !== ' ') return 'no';
  const key = readName(text, after + 1);
  const k = after + 1 + key.length;
  if (k >= text.length) return final ? 'no' : 'need-more';
  if (key === '') return 'no';
  const rest = text.slice(k, k + K_CLOSE.length);
  if (rest === K_CLOSE) return 'yes';
  return !final && K_CLOSE.startsWith(rest) ? 'need-more' : 'no';
}

/** Longest run (name, one blank, key) looked at for a dropped first `<arg_key>`. */
const GLUED_MAX = 128;

/**
 * `NAMEkey</arg_key>` or `NAME key</arg_key>` at `i`: the one split where NAME is a declared
 * tool and key one of its declared parameters; null when there is none or more than one.
 * Bounded: at most GLUED_MAX splits of a run of at most GLUED_MAX characters.
 */
function gluedFirstKey(
  body: string,
  i: number,
  ctx: ParseContext,
): { name: string; key: string; after: number } | null {
  const run = readName(body, i);
  if (run === '' || run.length > GLUED_MAX) return null;
  let j = i + run.length;
  let spaced = '';
  if (body[j] === ' ') {
    spaced = readName(body, j + 1);
    if (spaced === '' || spaced.length > GLUED_MAX) return null;
    j += 1 + spaced.length;
  }
  if (!body.startsWith(K_CLOSE, j)) return null;
  const splits =
    spaced !== ''
      ? [[run, spaced]]
      : [...Array(run.length - 1).keys()].map((n) => [run.slice(0, n + 1), run.slice(n + 1)]);
  let found: { name: string; key: string; after: number } | null = null;
  for (const [name = '', key = ''] of splits) {
    const props = (ctx.tools.get(name)?.parameters as { properties?: Record<string, unknown> } | undefined)
      ?.properties;
    if (!props || !Object.hasOwn(props, key)) continue;
    if (found) return null;
    found = { name, key, after: j + K_CLOSE.length };
  }
  return found;
}

/**
 * Next index of `lit` at or after `from`, each literal searched forward only (a miss is
 * remembered), so a body is read in one pass whatever its number of keys.
 */
function seeker(body: string) {
  const at = new Map<string, number>();
  return (lit: string, from: number): number => {
    const prev = at.get(lit);
    if (prev !== undefined && (prev < 0 || prev >= from)) return prev;
    const next = body.indexOf(lit, from);
    at.set(lit, next);
    return next;
  };
}

function parseBody(
  body: string,
  ctx: ParseContext,
  truncated = false,
): { calls: ParsedCall[] } | { error: string } {
  let i = skipWs(body, 0);
  let name = readName(body, i);
  if (name === '') return { error: 'no function name' };
  const repairs = new Set<string>();
  let firstKey: string | null = null;
  const glued =
    body.startsWith(K_CLOSE, i + name.length) || body[i + name.length] === ' '
      ? gluedFirstKey(body, i, ctx)
      : null;
  if (glued) {
    ({ name, key: firstKey } = glued);
    repairs.add('missing-arg-key-open');
    i = skipWs(body, glued.after);
  } else i = skipWs(body, i + name.length);
  // Near miss: the name, then the arguments as one JSON object (GLM-4's own older layout,
  // `NAME\n{…}`, kept inside the 4.5 tags): read only for a declared tool they fit
  if (!glued && body[i] === '{') {
    const o = decodeObject(body.slice(i).trim());
    const call = o ? gated({ name, args: o }, ctx.tools) : null;
    if (!call) return { error: 'unexpected text in tool call' };
    return { calls: [{ name: call.name, arguments: call.args, repairs: ['json-arguments'] }] };
  }
  const tool = ctx.tools.get(name);
  const args = createArgs();
  const next = seeker(body);
  let firstArg = !glued;
  // `NAME</arg_value>` and nothing else: a call without arguments and a stray closing tag
  // (fw-ai-external/python-sdk#119, GLM 5.2), read as `{}` when the tool takes none required
  if (!glued && body.startsWith(V_CLOSE, i)) {
    const after = skipWs(body, i + V_CLOSE.length);
    if (after < body.length || !tool || !fitsSchema(args, tool)) return { error: 'stray argument tag' };
    return { calls: [{ name, arguments: args, repairs: ['stray-arg-tag'] }] };
  }
  while (i < body.length || firstKey !== null) {
    let key: string;
    if (firstKey !== null) {
      key = firstKey;
      firstKey = null;
    } else {
      // `<tool_call>` where the first `<arg_key>` belongs (getsigit/sigit#95, GLM)
      const opener = body.startsWith(K_OPEN, i) ? K_OPEN : firstArg && body.startsWith(OPEN, i) ? OPEN : '';
      if (opener === '') return { error: 'unexpected text in tool call' };
      if (opener === OPEN) repairs.add('tool-call-for-arg-key');
      let kStart = i + opener.length;
      // a tag written twice (vllm-project/vllm#54971, GLM-4.7): `<arg_key><arg_key>k</arg_key>`,
      // `<arg_key>k</arg_key></arg_key>`
      if (body.startsWith(K_OPEN, kStart)) {
        kStart += K_OPEN.length;
        repairs.add('doubled-arg-tag');
      }
      const kEnd = next(K_CLOSE, kStart);
      if (kEnd < 0) return { error: 'unclosed arg_key' };
      key = body.slice(kStart, kEnd).trim();
      i = skipWs(body, kEnd + K_CLOSE.length);
      if (body.startsWith(K_CLOSE, i)) {
        i = skipWs(body, i + K_CLOSE.length);
        repairs.add('doubled-arg-tag');
      }
    }
    firstArg = false;
    // markup in a key is a broken call, never a parameter's name (exo-explore/exo#2187)
    if (holdsTag(key)) return { error: 'argument tag in a key' };
    // Two values for one key: which one did the model mean? Leave it as text.
    if (Object.hasOwn(args, key)) return { error: `duplicate argument ${JSON.stringify(key)}` };
    const opened = body.startsWith(V_OPEN, i);
    const from = opened ? i + V_OPEN.length : i;
    const vEnd = next(V_CLOSE, from);
    const nextKey = next(K_OPEN, from);
    // Near misses (issue 30; ollama/ollama model/parsers/glm46_test.go): a value whose
    // `<arg_value>` or `</arg_value>` the model dropped ends where the next key or the call
    // begins. Read only when the call then fits the declared tool's schema (below).
    const closed = vEnd >= 0 && (nextKey < 0 || vEnd < nextKey);
    if (!opened) {
      if (!closed) return { error: 'arg_key without arg_value' };
      repairs.add('missing-arg-value-open');
    } else if (!closed) {
      // a value the end of output cut off is not a value the model finished
      if (nextKey < 0 && truncated) return { error: 'unclosed arg_value' };
      repairs.add('missing-arg-value-close');
    }
    const end = closed ? vEnd : nextKey >= 0 ? nextKey : body.length;
    const raw = body.slice(from, end);
    // a value read past a dropped tag that holds another argument tag: the break is elsewhere
    // (`<arg_key>k</arg_key>=<arg_value>v`, `<arg_value>v</arg_key>`), no one reading is sure
    if ((!opened || !closed) && holdsTag(raw)) return { error: 'argument tag in a repaired value' };
    args[key] = coerceParamValue(opened && closed ? raw : raw.trim(), paramSchema(tool, key), {
      untyped: 'json',
    });
    i = skipWs(body, closed ? vEnd + V_CLOSE.length : end);
  }
  if (repairs.size === 0) return { calls: [{ name, arguments: args }] };
  if (!tool || !fitsSchema(args, tool)) return { error: 'arg_value tags broken' };
  return { calls: [{ name, arguments: args, repairs: [...repairs] }] };
}

const glmCall = delimitedEnvelope({
  end: CLOSE,
  accept,
  parseBody: (body, ctx, info) => parseBody(body, ctx, info.truncated),
});
const iquestCall = delimitedEnvelope({
  end: IQUEST_CLOSE,
  accept,
  parseBody: (body, ctx, info) => parseBody(body, ctx, info.truncated),
});

export const glm = defineFamily({
  name: 'glm',
  markers: [OPEN, IQUEST_OPEN],
  priority: 22,
  backend: { vllm: 'glm45', llamacpp: 'GLM 4.5', sglang: 'glm45' },
  match: (input) => (input.marker === IQUEST_OPEN ? iquestCall(input) : glmCall(input)),
});
