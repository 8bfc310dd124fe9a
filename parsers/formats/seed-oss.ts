/**
 * ByteDance Seed-OSS (vLLM `seed_oss`, llama.cpp "Seed-OSS"):
 *   <seed:think>…</seed:think>
 *   <seed:tool_call><function=NAME><parameter=P>value</parameter>…</function></seed:tool_call>
 * The call body is Qwen3-Coder's XML, read by its reader (schema-typed raw values). The
 * template writes a value right after its tag, so a newline ending it is part of it (`pass\n`);
 * only a value on its own lines (`>\nvalue\n<`) loses the newline on each side. Thinking goes
 * to reasoning.
 * Near miss (repair `named-attributes`): Doubao Seed 2.0 Pro writes the names as attributes,
 * each parameter tagged `string="true"` (sipeed/picoclaw#3153):
 *   <seed:tool_call>
 *     <function name="exec">
 *       <parameter name="command" string="true">ls -la</parameter>
 *     </function>
 *   </seed:tool_call>
 * Read (values typed by the schema, a `string="false"` one as JSON, as DSML's are) only when
 * the block is nothing but such functions, each names a declared tool and its arguments fit
 * the schema; otherwise the block is text.
 */
import { defineFamily } from '../engine/define.js';
import { type BodyResult, matchReasoningSection, readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import type { ParseContext } from '../types.js';
import { readFunctions } from './qwen3-coder.js';
import { closedEnvelope } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';
import { fitsSchema } from '../kit/schema-values.js';
import { isPlainObject } from '../kit/lenient-json.js';

const THINK = '<seed:think>';
const CALL = '<seed:tool_call>';

const NAMED: XmlCallSpec = {
  callOpen: '<function name="',
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: '</function>',
  argOpen: '<parameter name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</parameter>',
  valueMode: (attrs) => (attrs.includes('string="false"') ? 'schema-json' : 'schema'),
};

/** The attribute spelling, schema-gated: every call declared and fitting, or no call. */
function readNamed(body: string, ctx: ParseContext): BodyResult {
  const r = readXmlCalls(body, NAMED, ctx);
  if ('error' in r) return r;
  for (const c of r.calls) {
    const tool = ctx.tools.get(c.name);
    if (!tool || !isPlainObject(c.arguments) || !fitsSchema(c.arguments, tool))
      return { error: 'arguments do not fit the declared tool' };
  }
  return { calls: r.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'named-attributes'] })) };
}

const call = closedEnvelope({
  open: CALL,
  end: '</seed:tool_call>',
  // Cut off at the end of output: the same policy as qwen3-coder (whose reader this is), a
  // value still open runs to the end and the call carries the 'unclosed-envelope' repair.
  // Being stricter here would not help: the engine rescans a broken envelope and qwen3-coder
  // would read the inner <function=…> anyway, under the wrong format name. The attribute
  // spelling is read closed only.
  read: (body, ctx, { truncated }) =>
    body.startsWith(NAMED.callOpen, skipWs(body, 0))
      ? truncated
        ? { error: 'unclosed tool call' }
        : readNamed(body, ctx)
      : readFunctions(body, ctx, truncated, 'pair'),
});

export const seedOss = defineFamily({
  name: 'seed-oss',
  markers: [THINK, CALL],
  priority: 42,
  backend: { vllm: 'seed_oss', llamacpp: 'Seed-OSS' },
  match: (input) => (input.marker === THINK ? matchReasoningSection(input, '</seed:think>') : call(input)),
});
