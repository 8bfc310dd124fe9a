/**
 * MiniMax-M2 (vLLM `minimax_m2`):
 *   <minimax:tool_call>
 *   <invoke name="NAME"><parameter name="P">value</parameter>…</invoke>…
 *   </minimax:tool_call>
 * Values are raw text typed by the declared schema; a declared string stays byte for byte
 * (whitespace included: edit tools compare it exactly).
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { closedEnvelope } from '../kit/envelope.js';
import { expectLiteral, skipWs } from '../kit/json-scan.js';
import { fitsSchema } from '../kit/schema-values.js';

const OPEN = '<minimax:tool_call>';
const END = '</minimax:tool_call>';
/** A `[Tool Use: NAME]` line where the `<minimax:tool_call><invoke name="NAME">` pair belongs. */
const TOOL_USE = '[Tool Use: ';

export const MINIMAX_INVOKE: XmlCallSpec = {
  callOpen: '<invoke name="',
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: '</invoke>',
  argOpen: '<parameter name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</parameter>',
};

const envelope = closedEnvelope({
  open: OPEN,
  end: END,
  read: (body, ctx) => readXmlCalls(body, MINIMAX_INVOKE, ctx),
});

/**
 * Near miss (issue 30, repair `tool-use-header`): the block's two openers written as one
 * `[Tool Use: NAME]` line, its parameters and both closers intact:
 *   [Tool Use: ask_followup_question]
 *   <parameter name="question">…</parameter>
 *   </invoke>
 *   </minimax:tool_call>
 * (RooCodeInc/Roo-Code#10547, a MiniMax model under Roo Code). Claimed only when the line names
 * a declared tool and a `<parameter name="` follows it; read only when the text up to the first
 * `</minimax:tool_call>` is exactly one invoke's parameters and `</invoke>`, and the arguments
 * fit the tool's schema. Otherwise the line is text.
 */
function toolUseHeader({ text, start, marker, final, ctx, find }: MatchInput): MatchResult {
  const from = start + marker.length;
  // memoised searches: many `[Tool Use: ` markers without a `]` stay linear
  const close = find(']', from);
  const nl = find('\n', from);
  if (close < 0 || (nl >= 0 && nl < close)) return close < 0 && nl < 0 && !final ? 'need-more' : null;
  const name = text.slice(from, close).trim();
  const tool = ctx.tools.get(name);
  if (!tool) return null;
  const j = skipWs(text, close + 1);
  if (j >= text.length) return final ? null : 'need-more';
  const p = expectLiteral(text, j, MINIMAX_INVOKE.argOpen, final);
  if (p !== 'yes') return p === 'need-more' ? p : null;
  const end = find(END, j);
  if (end < 0) return final ? null : 'need-more';
  const read = readXmlCalls(`${MINIMAX_INVOKE.callOpen}${name}">${text.slice(j, end)}`, MINIMAX_INVOKE, ctx);
  if ('error' in read || read.calls.length !== 1) return null;
  const call = read.calls[0]!;
  const args = call.arguments;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return null;
  if (!fitsSchema(args as Record<string, unknown>, tool)) return null;
  return {
    end: end + END.length,
    calls: [{ ...call, repairs: [...(call.repairs ?? []), 'tool-use-header'] }],
  };
}

export const minimaxM2 = defineFamily({
  name: 'minimax-m2',
  markers: [OPEN, TOOL_USE],
  priority: 40,
  backend: { vllm: 'minimax_m2', llamacpp: 'MiniMax-M2', sglang: 'minimax-m2' },
  match: (input) => (input.marker === TOOL_USE ? toolUseHeader(input) : envelope(input)),
});
