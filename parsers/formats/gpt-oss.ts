/**
 * gpt-oss (harmony): <|start|>assistant<|channel|>analysis<|message|>…<|end|> is reasoning,
 * <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|> is a call
 * (the recipient may also sit in the role header: <|start|>assistant to=functions.NAME<|channel|>…),
 * <|channel|>final<|message|>…<|return|> is content. Each <|start|>/<|channel|> block is one
 * envelope, ending at <|end|>, <|call|>, <|return|>, the next block, or the end of output.
 * The flattened `<tool_call>assistant to=functions.NAME json {…}</tool_call>` form is read too.
 * When the prompt ends with `<|start|>assistant`, the output itself begins with the rest of the
 * role header: ` to=functions.NAME<|channel|>…<|message|>{…}` (llama.cpp test-chat.cpp). That
 * marker is read only at the very start of the output; anywhere else it is text.
 */
import { JsonEnds } from '../kit/json-ends.js';
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchInput, MatchResult } from '../engine/family.js';
import type { ParseContext } from '../types.js';
import { decodeBody } from '../kit/envelope.js';
import { expectLiteral, scanJsonValue, skipWs, strictObject } from '../kit/json-scan.js';
import { fitsSchema } from '../kit/schema-values.js';
import { trailingPartialClose } from '../kit/close-slip.js';

const START = '<|start|>';
const CHANNEL = '<|channel|>';
const MESSAGE = '<|message|>';
const CONSTRAIN = '<|constrain|>';
const TERMINATORS = ['<|end|>', '<|call|>', '<|return|>'];
const NEXT_BLOCK = [START, CHANNEL];
const TOOL_CALL = '<tool_call>';
const TOOL_CALL_CLOSE = '</tool_call>';
/** The tail of a role header whose `<|start|>assistant` was in the prompt. */
const ROLE_TAIL = ' to=functions.';
/** A call header whose control tokens were stripped (a backend decoding them as nothing). */
const STRIPPED = 'commentary to=functions.';
/**
 * The same with the recipient in the role header (openai/codex#13114, gpt-5.3-codex):
 * `assistant to=functions.NAME commentary json\n{…}`. A whole-output start, not a marker: read
 * only when it opens the output (a marker starting with a common letter would cost the scan of
 * every marker-free answer about a tenth). The lead-in gate leaves it out of its candidates.
 */
const STRIPPED_ROLE = 'assistant to=functions.';

/** First terminator or next block at/after i: [index, length consumed]. */
function bodyEnd(text: string, i: number): { at: number; len: number } | null {
  let at = text.indexOf('<|', i);
  while (at >= 0) {
    for (const t of TERMINATORS) if (text.startsWith(t, at)) return { at, len: t.length };
    for (const t of NEXT_BLOCK) if (text.startsWith(t, at)) return { at, len: 0 };
    at = text.indexOf('<|', at + 2);
  }
  return null;
}

function recipientOf(header: string): string | undefined {
  const k = header.indexOf('to=');
  if (k < 0) return undefined;
  let e = k + 3;
  while (e < header.length && !/[\s<]/.test(header[e] ?? '')) e++;
  return header.slice(k + 3, e);
}

/** A recipient (`functions.NAME`) and its JSON arguments as one call. */
function recipientCall(
  recipient: string,
  body: string,
  end: number,
  truncated: boolean,
  ctx?: ParseContext,
  bodyAt?: number,
  closed = false,
): EnvelopeMatch {
  // `closed`: a terminator ended the body, so a last `}` missing is missing right before it
  const d = decodeBody(body, truncated || closed);
  // a built-in recipient (browser.search, python) keeps its dotted name: the safety rules reject it whole
  if (!recipient.startsWith('functions.'))
    return { end, calls: [{ name: recipient, arguments: d?.value ?? body }] };
  // `<|message|><|call|>`: a finished call with nothing to say (vLLM passes "" on); the engine
  // reads empty arguments as `{}` (repair empty-arguments). Cut off there, it stays text; so does
  // an empty message the next header follows (`<|message|><|start|>…`, the header written twice:
  // recall11 read it as a second call with `{}`), which no terminator finished.
  if (!d && !truncated && closed && body.trim() === '')
    return { end, calls: [{ name: recipient.slice('functions.'.length), arguments: '' }] };
  if (!d) {
    const t = ctx && bodyAt !== undefined ? trailingText(recipient, body, bodyAt, ctx) : null;
    return t ?? { end, calls: [], error: 'arguments are not JSON', ...(truncated ? { truncated } : {}) };
  }
  const m: EnvelopeMatch = {
    end,
    calls: [
      {
        name: recipient.slice('functions.'.length),
        arguments: d.value,
        ...(d.repairs.length ? { repairs: d.repairs } : {}),
      },
    ],
  };
  if (truncated) m.truncated = true;
  return m;
}

/**
 * Near miss (issue 30, repair `trailing-text`): a call message whose JSON object is followed by
 * prose, as small models write when they skip `<|call|>` (often after a non-json constraint such
 * as `<|constrain|>code`, which the header reading already ignores). Read only when the message
 * starts with one complete JSON object, the tool is declared and the object fits its schema;
 * the call ends after the object, so the text after it stays content, byte for byte. Source:
 * harmony's message format (openai/harmony docs, `<|call|>` ends a tool call) and issue 30.
 */
function trailingText(
  recipient: string,
  body: string,
  bodyAt: number,
  ctx: ParseContext,
): EnvelopeMatch | null {
  const name = recipient.slice('functions.'.length);
  const tool = ctx.tools.get(name);
  if (!tool) return null;
  const j = skipWs(body, 0);
  if (body[j] !== '{') return null;
  const scan = scanJsonValue(body, j);
  if (!scan || scan.end < 0) return null;
  // Nothing after it is not this repair; an object anywhere after it is a second candidate.
  const rest = body.slice(scan.end).trim();
  if (rest === '' || rest.includes('{')) return null;
  const value = strictObject(body, j, scan.end);
  if (value === null) return null;
  if (!fitsSchema(value, tool)) return null;
  return { end: bodyAt + scan.end, calls: [{ name, arguments: value, repairs: ['trailing-text'] }] };
}

/**
 * Near miss (issue 30, repair `stripped-control-tokens`): a harmony call whose control tokens a
 * backend decoded as nothing, `commentary to=functions.NAME json{…}` (Rapid-MLX#480, gpt-oss-20b:
 * `<|channel|>`, `<|constrain|>`, `<|message|>` and `<|call|>` gone). Read only when NAME is a
 * declared tool, an optional `json` / `code` constraint word follows, then one strict JSON object
 * that fits the tool's schema and nothing but blanks to the end of output (the stripped
 * `<|call|>` ended the turn); anything after the object leaves the whole text as it is. The
 * role-header form (`assistant to=functions.NAME commentary json{…}`, STRIPPED_ROLE) is read the
 * same way when it opens the output, its `commentary` word optional.
 */
function stripped({ text, start, marker, final, ctx, jsonEnd }: MatchInput): MatchResult {
  const from = start + marker.length;
  let e = from;
  while (e < text.length && !/[\s{<]/.test(text[e] ?? '')) e++;
  if (e >= text.length) return final ? null : 'need-more';
  const name = text.slice(from, e);
  const tool = ctx.tools.get(name);
  if (!tool) return null;
  let j = skipWs(text, e);
  if (j >= text.length) return final ? null : 'need-more';
  // the role-header form names its channel after the recipient
  if (marker === STRIPPED_ROLE) {
    const w = expectLiteral(text, j, 'commentary', final);
    if (w === 'need-more') return w;
    if (w === 'yes') j = skipWs(text, j + 'commentary'.length);
    if (j >= text.length) return final ? null : 'need-more';
  }
  for (const word of ['json', 'code']) {
    const w = expectLiteral(text, j, word, final);
    if (w === 'need-more') return w;
    if (w === 'yes') {
      j = skipWs(text, j + word.length);
      break;
    }
  }
  if (j >= text.length) return final ? null : 'need-more';
  if (text[j] !== '{') return null;
  // the scanner's shared walk: a thousand of these headers whose objects never close cost one
  // walk to the end of the output, not one each
  const end = jsonEnd(j);
  if (end === -2) return null;
  if (end < 0) return final ? null : 'need-more';
  // the call ends the output: anything but blanks after it and this is not the near miss
  if (skipWs(text, end) < text.length) return null;
  if (!final) return 'need-more';
  const value = strictObject(text, j, end);
  if (value === null) return null;
  if (!fitsSchema(value, tool)) return null;
  return { end: text.length, calls: [{ name, arguments: value, repairs: ['stripped-control-tokens'] }] };
}

/**
 * Harmony flattened into a Hermes tag (vLLM's and SGLang's gpt-oss dialect of the
 * multi-format reader): `<tool_call>assistant to=functions.NAME json\n{…}\n</tool_call>`, the
 * `assistant` optional. Claimed only when the tag opens with the recipient.
 */
function flattened({ text, start, marker, final, find }: MatchInput): MatchResult {
  let i = skipWs(text, start + marker.length);
  for (const lit of ['assistant', 'to=']) {
    const e = expectLiteral(text, i, lit, final);
    if (e === 'need-more' || (i >= text.length && !final)) return 'need-more';
    if (e === 'yes') i = skipWs(text, i + lit.length);
    else if (lit === 'to=') return null;
    if (lit === 'assistant' && e === 'yes' && i >= text.length) return final ? null : 'need-more';
  }
  const close = find(TOOL_CALL_CLOSE, start);
  if (close < 0 && !final) return 'need-more';
  const stop = close < 0 ? text.length : close;
  const head = text.indexOf('{', start);
  if (head < 0 || head > stop) return { end: stop, calls: [], error: 'no JSON arguments' };
  const recipient = recipientOf(text.slice(start, head)) ?? '';
  if (recipient === '') return { end: stop, calls: [], error: 'no recipient' };
  const end = close < 0 ? text.length : close + TOOL_CALL_CLOSE.length;
  return recipientCall(recipient, text.slice(head, stop), end, close < 0, undefined, undefined, close >= 0);
}

export const gptOss = defineFamily({
  name: 'gpt-oss',
  markers: [START, CHANNEL, TOOL_CALL, ROLE_TAIL, STRIPPED],
  wholeStarts: [STRIPPED_ROLE],
  matchWhole(text, ctx) {
    const i = skipWs(text, 0);
    if (!text.startsWith(STRIPPED_ROLE, i)) return null;
    const find = (lit: string, from: number) => text.indexOf(lit, from);
    // one value, read once: a walk of its own
    const jsonEnd = (from: number) => new JsonEnds(text, from).end(from) ?? -1;
    const r = stripped({ text, start: i, marker: STRIPPED_ROLE, final: true, ctx, find, jsonEnd });
    return r === null || r === 'need-more' ? null : r;
  },
  priority: 10,
  backend: { vllm: 'openai', llamacpp: 'GPT-OSS', sglang: 'gpt-oss' },
  match(input): MatchResult {
    if (input.marker === TOOL_CALL) return flattened(input);
    if (input.marker === STRIPPED) return stripped(input);
    if (input.marker === ROLE_TAIL && input.start !== 0) return null;
    const { text, start, final, find } = input;
    const msg = find(MESSAGE, start);
    // a header is short; a very long one means this is not a harmony block. Decided as soon as
    // the header could no longer be short (so prose holding a stray token streams on), and the
    // same way whether or not the message marker has arrived yet (prefix-stable)
    if ((msg < 0 && text.length - start > 512 + MESSAGE.length) || msg - start > 512) {
      return { end: start + 1, calls: [], error: 'harmony header too long' };
    }
    if (msg < 0) {
      if (final)
        return { end: text.length, calls: [], error: 'harmony header without message', truncated: true };
      return 'need-more';
    }
    const header = text.slice(start, msg);
    const bodyStart = msg + MESSAGE.length;
    const be = bodyEnd(text, bodyStart);
    if (!be && !final) return 'need-more';
    // recall14: the output ends inside a terminator (`<|cal`): it goes with the open message
    const cut = be ? -1 : Math.max(...TERMINATORS.map((t) => trailingPartialClose(text, t)));
    const bodyStop = be ? be.at : cut >= bodyStart ? cut : text.length;
    const end = be ? be.at + be.len : text.length;
    const body = text.slice(bodyStart, bodyStop);
    const ch = header.indexOf(CHANNEL);
    const channelText = ch < 0 ? '' : header.slice(ch + CHANNEL.length).replace(CONSTRAIN, ' ');
    const channel = channelText.trim().split(/\s+/)[0] ?? '';
    const recipient = recipientOf(header);
    const truncated = !be;
    if (recipient !== undefined)
      return recipientCall(recipient, body, end, truncated, input.ctx, bodyStart, (be?.len ?? 0) > 0);
    if (channel === 'analysis') return { end, calls: [], reasoning: body, control: true };
    return { end, calls: [], content: body, control: true };
  },
});
