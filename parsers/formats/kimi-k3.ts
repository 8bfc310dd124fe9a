/**
 * Kimi K3 "XTML" (vLLM `kimi_k3`, llama.cpp "Kimi K3"): sections opened by `<|open|>NAME attrs<|sep|>`
 * and closed by `<|close|>NAME<|sep|>`:
 *   <|open|>think<|sep|>…<|close|>think<|sep|>          → reasoning
 *   <|open|>response<|sep|>…<|close|>response<|sep|>    → content (markers removed)
 *   <|open|>tools<|sep|><|open|>call tool="NAME" index="0"<|sep|>
 *     <|open|>argument key="K" type="string"<|sep|>value<|close|>argument<|sep|>
 *   <|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>
 * type="string" values are text (typed by the schema when it declares a non-string); other
 * types are JSON. A call may instead hold its arguments as one JSON object,
 * `<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>` (the template renders string
 * arguments so); it must decode to an object. The template leaves the think section open in the prompt (startsInReasoning):
 * the output then begins inside it, and starting with the response or tools section means the
 * model skipped it.
 */
import { defineFamily } from '../engine/define.js';
import { controlToken, matchReasoningSection, readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { closedEnvelope } from '../kit/envelope.js';

const THINK = '<|open|>think<|sep|>';
const THINK_END = '<|close|>think<|sep|>';
const TOOLS = '<|open|>tools<|sep|>';
const RESPONSE = '<|open|>response<|sep|>';
const CONTROL = [
  '<|open|>message role="assistant"<|sep|>',
  RESPONSE,
  '<|close|>response<|sep|>',
  '<|close|>message<|sep|>',
  '<|end_of_msg|>',
];

const CALLS: XmlCallSpec = {
  callOpen: '<|open|>call tool="',
  callNameEnd: '"',
  callHeadEnd: '<|sep|>',
  callClose: '<|close|>call<|sep|>',
  argOpen: '<|open|>argument key="',
  argNameEnd: '"',
  argHeadEnd: '<|sep|>',
  argClose: '<|close|>argument<|sep|>',
  valueMode: (attrs) => (attrs.includes('type="') && !attrs.includes('type="string"') ? 'json' : 'schema'),
  jsonArgs: true,
};

const JSON_OPEN = '<|open|>json';
const JSON_CLOSE = '<|close|>json<|sep|>';
const SEP = '<|sep|>';

/** Drops the `<|open|>json …<|sep|>` / `<|close|>json<|sep|>` wrappers, keeping the JSON (one pass). */
function unwrapJsonBlocks(body: string): string {
  if (!body.includes(JSON_OPEN)) return body;
  let out = '';
  let i = 0;
  for (;;) {
    const at = body.indexOf(JSON_OPEN, i);
    const head = at < 0 ? -1 : body.indexOf(SEP, at);
    const close = head < 0 ? -1 : body.indexOf(JSON_CLOSE, head);
    if (close < 0) break;
    out += body.slice(i, at) + body.slice(head + SEP.length, close);
    i = close + JSON_CLOSE.length;
  }
  return out + body.slice(i);
}

const tools = closedEnvelope({
  open: TOOLS,
  end: '<|close|>tools<|sep|>',
  read: (body, ctx) => readXmlCalls(unwrapJsonBlocks(body), CALLS, ctx),
});

export const kimiK3 = defineFamily({
  name: 'kimi-k3',
  markers: [THINK, TOOLS, ...CONTROL],
  priority: 40,
  backend: { vllm: 'kimi_k3', llamacpp: 'Kimi K3' },
  reasoning: [{ open: THINK, close: THINK_END, skippedBy: [RESPONSE, TOOLS] }],
  match(input) {
    // a section opened after other text (a leading one is the think splitter's)
    if (input.marker === THINK) return matchReasoningSection(input, THINK_END);
    if (input.marker === TOOLS) return tools(input);
    return controlToken(input.start, input.marker);
  },
});
