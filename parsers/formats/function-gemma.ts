/**
 * FunctionGemma (vLLM `functiongemma`):
 * `<start_function_call>call:NAME{key:<escape>value<escape>,…}<end_function_call>`.
 * Gemma 4's argument syntax with `<escape>` as the string delimiter (see gemma4.ts). The model
 * also wraps numbers and booleans in `<escape>`: the declared schema types them.
 *
 * Near misses read (issue 30), each named in the call's `repairs`, each only when the call then
 * names a declared tool and its arguments fit that tool's schema (fitsSchema):
 * - `missing-call-prefix`: `<start_function_call>NAME{…}` without `call:`;
 * - `mismatched-close-tag`: closed by `</end_function_call>` (an XML-style close) instead of
 *   `<end_function_call>`.
 * Source: the envelope and its `call:` prefix are FunctionGemma's published chat template
 * (google/functiongemma-270m-it, chat_template.jinja); the two breaks are the ones issue 30
 * lists from small-model outputs. Otherwise the envelope is read strictly, as before.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import type { ParsedCall } from '../types.js';
import { readDelimitedCalls } from './gemma4.js';
import { closedEnvelope } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';
import { fitsSchema } from '../kit/schema-values.js';

const OPEN = '<start_function_call>';
const END = '<end_function_call>';
const BAD_END = '</end_function_call>';

const strict = closedEnvelope({
  open: OPEN,
  end: END,
  read: (body, ctx) => readDelimitedCalls(body, '<escape>', ctx),
});

/**
 * The envelope's calls after the repairs it needs, or null: every call must name a declared
 * tool and fit its schema, so a repair never makes a call the strict reading would not trust.
 */
function repaired(body: string, input: MatchInput, closeRepair: boolean): ParsedCall[] | null {
  const repairs = closeRepair ? ['mismatched-close-tag'] : [];
  let read = readDelimitedCalls(body, '<escape>', input.ctx);
  if ('error' in read) {
    const j = skipWs(body, 0);
    if (body.startsWith('call:', j) || body.startsWith(':call:', j)) return null;
    read = readDelimitedCalls(`call:${body.slice(j)}`, '<escape>', input.ctx);
    if ('error' in read) return null;
    repairs.push('missing-call-prefix');
  }
  if (repairs.length === 0) return null;
  for (const c of read.calls) {
    const tool = input.ctx.tools.get(c.name);
    if (!tool || !isObject(c.arguments) || !fitsSchema(c.arguments, tool)) return null;
  }
  return read.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), ...repairs] }));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function match(input: MatchInput): MatchResult {
  const { start, find } = input;
  const from = start + OPEN.length;
  // The first close of either spelling ends the envelope: a later one cannot come before it, so
  // the choice is the same on every extension of the text (prefix-stable).
  const good = find(END, from);
  const bad = find(BAD_END, from);
  const reopen = find(OPEN, from);
  const closedBad = bad >= 0 && (good < 0 || bad < good) && (reopen < 0 || bad < reopen);
  if (!closedBad) {
    const r = strict(input);
    if (r === null || r === 'need-more' || good < 0 || r.error === undefined) return r;
    // Closed by its own tag but unreadable: a missing `call:` may be all that is wrong.
    const calls = repaired(input.text.slice(from, good), input, false);
    return calls ? { end: good + END.length, calls } : r;
  }
  const calls = repaired(input.text.slice(from, bad), input, true);
  return calls
    ? { end: bad + BAD_END.length, calls }
    : { end: bad + BAD_END.length, calls: [], error: 'unreadable envelope closed by </end_function_call>' };
}

export const functionGemma = defineFamily({
  name: 'function-gemma',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'functiongemma' },
  match,
});
