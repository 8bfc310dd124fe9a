/**
 * recall17: the two readings the held-out set wild14 (tests/fixtures/recall/wild14.json) added,
 * each written for the generator's four tools and put where a small model puts it; beside them
 * the look-alikes that must stay text. Written after the wild14 reading change and measured on
 * the code before and after it (docs/recall.md "recall17").
 *
 * - Gemma 4's call with its pairs in parentheses, `<|tool_call>call:NAME(key: value, …)<tool_call|>`
 *   (NousResearch/hermes-agent#7457), strings as JSON strings or in `<|"|>`.
 * - A call section in the reasoning whose own end marker the end of the reasoning cut
 *   (`<|tool_calls_section_end|`, anomalyco/opencode#8851), for the families that read such an
 *   envelope in content: upstream reasoning, and a `<think>` the output opened and left open.
 */
import type { JsonObject } from '../../protocol/openai.js';
import type { PerturbCase } from './perturb-cases.js';

type Call = { name: string; arguments: JsonObject };

const ARGS17: Record<string, JsonObject> = {
  read_file: { path: 'src/app.ts' },
  get_weather: { city: 'Paris', unit: 'celsius' },
  search: { query: 'tool calling', limit: 5, exact: true },
  write_file: { path: 'notes.md', content: 'line one\nsay "hi" twice' },
};

/** `key: value, …` with strings as JSON strings (`json`) or in Gemma's `<|"|>` token. */
function pairs(args: JsonObject, strings: 'json' | 'token'): string {
  return Object.entries(args)
    .map(
      ([k, v]) =>
        `${k}: ${typeof v === 'string' && strings === 'token' ? `<|"|>${v}<|"|>` : JSON.stringify(v)}`,
    )
    .join(', ');
}

const gemmaParen = (c: Call, strings: 'json' | 'token') =>
  `<|tool_call>call:${c.name}(${pairs(c.arguments, strings)})<tool_call|>`;

/** The families whose envelope, cut inside its own end marker, reads in content. */
const SECTIONS: { name: string; one: (c: Call) => string }[] = [
  {
    name: 'kimi-k2',
    one: (c) =>
      `<|tool_calls_section_begin|><|tool_call_begin|>functions.${c.name}:0<|tool_call_argument_begin|>${JSON.stringify(c.arguments)}<|tool_call_end|><|tool_calls_section_end|>`,
  },
  {
    name: 'hermes',
    one: (c) => `<tool_call>\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n</tool_call>`,
  },
  {
    name: 'qwen3-coder',
    one: (c) =>
      `<tool_call>\n<function=${c.name}>\n${Object.entries(c.arguments)
        .map(([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : JSON.stringify(v)}\n</parameter>`)
        .join('\n')}\n</function>\n</tool_call>`,
  },
  {
    name: 'deepseek-v31',
    one: (c) =>
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>${c.name}<｜tool▁sep｜>${JSON.stringify(c.arguments)}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
  },
];

/** The envelope cut 3 code units before its end: inside its own end marker. */
const cutClose = (s: string) => s.slice(0, s.length - 3);

export function recall17Cases(): PerturbCase[] {
  const out: PerturbCase[] = [];
  const add = (c: Omit<PerturbCase, 'id' | 'set' | 'cut' | 'prose'> & { cut?: boolean; prose?: string }) => {
    out.push({
      ...c,
      id: `recall17/${c.format}/${c.perturbation}/${c.calls[0]?.name ?? 'none'}`,
      format: `${c.format}+`,
      cut: c.cut ?? false,
      prose: c.prose ?? '',
      set: 'recall17',
    });
  };
  for (const [tool, args] of Object.entries(ARGS17)) {
    const call = { name: tool, arguments: args };
    const two = tool === 'read_file' || tool === 'write_file';
    // Gemma 4 parentheses
    for (const strings of ['json', 'token'] as const) {
      const one = gemmaParen(call, strings);
      const format = `gemma4-paren-${strings}`;
      add({ format, perturbation: 'plain', text: one, truth: 'call', calls: [call] });
      add({
        format,
        perturbation: 'undeclared',
        text: gemmaParen({ name: 'fetch_page', arguments: args }, strings),
        truth: 'content',
        calls: [],
      });
      add({
        format,
        perturbation: 'cut',
        text: one.slice(0, Math.floor(one.length * 0.6)),
        truth: 'content',
        calls: [],
        cut: true,
      });
      if (!two) continue;
      add({
        format,
        perturbation: 'lead-in',
        text: `Let me do that now.\n\n${one}`,
        truth: 'call',
        calls: [call],
        prose: 'Let me do that now.',
      });
      add({
        format,
        perturbation: 'inline-code',
        text: `Write it as \`${one}\` and the agent runs it.`,
        truth: 'content',
        calls: [],
      });
      // a required argument missing: not the tool's call
      add({
        format,
        perturbation: 'missing-required',
        text: gemmaParen({ name: tool, arguments: { note: 'x' } }, strings),
        truth: 'content',
        calls: [],
      });
    }
    // a bare word where a value belongs (`city: Paris`): not read in parentheses, either way fine
    if (tool === 'get_weather')
      add({
        format: 'gemma4-paren-bare',
        perturbation: 'bare-word',
        text: '<|tool_call>call:get_weather(city: Paris, unit: celsius)<tool_call|>',
        truth: 'either',
        calls: [call],
      });
    // single quotes (Python's spelling in the colon form): never the quoted word with its quotes
    if (tool === 'get_weather')
      add({
        format: 'gemma4-paren-bare',
        perturbation: 'single-quotes',
        text: "<|tool_call>call:get_weather(city: 'Paris', unit: 'celsius')<tool_call|>",
        truth: 'either',
        calls: [call],
      });
    // a section in the reasoning, its end marker cut by the end of the reasoning
    if (!two) continue;
    for (const s of SECTIONS) {
      const full = s.one(call);
      const lead = `I will call ${tool}. `;
      add({
        format: `reasoning-${s.name}`,
        perturbation: 'close-cut',
        text: '',
        reasoning: lead + cutClose(full),
        truth: 'call',
        calls: [call],
      });
      add({
        format: `think-${s.name}`,
        perturbation: 'close-cut',
        text: `<think>\n${lead}${cutClose(full)}`,
        truth: 'call',
        calls: [call],
        toReasoning: true,
      });
      // look-alikes: the token limit cut it, an undeclared tool, the content answered instead,
      // the cut inside the arguments rather than the end marker
      add({
        format: `reasoning-${s.name}`,
        perturbation: 'cut-by-limit',
        text: '',
        reasoning: lead + cutClose(full),
        truth: 'content',
        calls: [],
        cut: true,
      });
      add({
        format: `reasoning-${s.name}`,
        perturbation: 'undeclared',
        text: '',
        reasoning: lead + cutClose(s.one({ name: 'fetch_page', arguments: args })),
        truth: 'content',
        calls: [],
      });
      add({
        format: `reasoning-${s.name}`,
        perturbation: 'answered',
        text: 'The file is short; here is what it says.',
        reasoning: lead + cutClose(full),
        truth: 'content',
        calls: [],
      });
      add({
        format: `reasoning-${s.name}`,
        perturbation: 'cut-in-arguments',
        text: '',
        reasoning: lead + full.slice(0, Math.floor(full.length * 0.5)),
        truth: 'content',
        calls: [],
      });
    }
  }
  return out;
}
