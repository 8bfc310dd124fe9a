/**
 * recall16: the call shapes of the held-out set wild13 (tests/fixtures/recall/wild13.json) that a
 * careful reader reads as calls, each written for the generator's four tools and put in the places
 * a small model puts them: alone, after an empty or a short `<think>` section, with an end-of-turn
 * token written out after it, after a short announcing sentence (`either`); beside them the
 * look-alikes that must stay text: the same shape naming an undeclared tool, shown in inline code,
 * shown in a fenced example the answer goes on past, cut by the token limit. Written after the
 * wild13 reading change and measured on the code before and after it (docs/recall.md "recall16").
 */
import type { JsonObject } from '../../protocol/openai.js';
import type { PerturbCase } from './perturb-cases.js';

type Call = { name: string; arguments: JsonObject };

const ARGS16: Record<string, JsonObject> = {
  read_file: { path: 'src/app.ts' },
  get_weather: { city: 'Paris', unit: 'celsius' },
  search: { query: 'tool calling', limit: 5, exact: true },
  write_file: { path: 'notes.md', content: 'line one\nsay "hi" twice' },
};

/** Python's repr of a JSON value (Hermes 2 Pro's dict: single quotes, True/False). */
function pyRepr(v: unknown): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null) return 'None';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string')
    return `'${v.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n')}'`;
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(v as JsonObject)
    .map(([k, x]) => `'${k}': ${pyRepr(x)}`)
    .join(', ')}}`;
}

/** Each shape with its source in wild13. */
const SHAPES: { name: string; one: (c: Call) => string }[] = [
  // LM Studio's default block (lmstudio-ai/lmstudio-bug-tracker#456)
  {
    name: 'lmstudio-tool-request',
    one: (c) =>
      `[TOOL_REQUEST]\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n[END_TOOL_REQUEST]`,
  },
  // a Phi-4-mini template's plural list (vllm-project/vllm#14682)
  {
    name: 'phi4-plural-list',
    one: (c) => `<|tool_calls|>[${JSON.stringify({ name: c.name, arguments: c.arguments })}]<|/tool_calls|>`,
  },
  // GLM-4-9B-0414: the name on its own line, then the arguments (ml-explore/mlx-swift-lm#491)
  { name: 'glm4-0414-name-json', one: (c) => `${c.name}\n${JSON.stringify(c.arguments)}` },
  // hermes3:8b: arguments first, compact (NVIDIA/NemoClaw#2733)
  { name: 'arguments-first', one: (c) => JSON.stringify({ arguments: c.arguments, name: c.name }) },
  // Hermes 2 Pro: the call as a Python dict (NousResearch/Hermes-Function-Calling#3)
  { name: 'python-dict', one: (c) => pyRepr({ arguments: c.arguments, name: c.name }) },
  // Qwen3.6: {"tool_name", "tool_input"}, pretty-printed (1CatAI/1Cat-vLLM#26)
  {
    name: 'tool-name-input',
    one: (c) => JSON.stringify({ tool_name: c.name, tool_input: c.arguments }, null, 2),
  },
  // the gemma3-tools Ollama template's <tool> tag (ollama/ollama#9680)
  {
    name: 'gemma-tool-tag',
    one: (c) => `<tool>\n${JSON.stringify({ name: c.name, parameters: c.arguments })}\n</tool>`,
  },
];

export function recall16Cases(): PerturbCase[] {
  const out: PerturbCase[] = [];
  const add = (
    format: string,
    perturbation: string,
    tool: string,
    text: string,
    truth: PerturbCase['truth'],
    calls: Call[],
    prose = '',
    cut = false,
    kept?: string,
  ) => {
    out.push({
      id: `recall16/${format}/${perturbation}/${tool}`,
      format: `${format}+`,
      perturbation,
      text,
      cut,
      truth,
      calls,
      prose,
      set: 'recall16',
      ...(kept !== undefined ? { kept } : {}),
    });
  };
  for (const s of SHAPES) {
    for (const [tool, args] of Object.entries(ARGS16)) {
      const call = { name: tool, arguments: args };
      const one = s.one(call);
      add(s.name, 'plain', tool, one, 'call', [call]);
      // the places around the call, for two of the four tools (each case costs perturb.test.ts its
      // one-character stream, and where the call stands does not depend on the tool)
      if (tool === 'read_file' || tool === 'write_file') {
        // Qwen3's no-think turn, and a short reasoning section first
        // (with no call read, the text after the section is the content: the section is reasoning)
        add(s.name, 'empty-think', tool, `<think>\n\n</think>\n\n${one}`, 'call', [call], '', false, one);
        add(
          s.name,
          'think-first',
          tool,
          `<think>\nThe user asked for it; I will call ${tool}.\n</think>\n\n${one}`,
          'call',
          [call],
          '',
          false,
          one,
        );
        // the backend's end-of-turn token written out after the call (with no call read, the token
        // is dropped as the control token it is)
        add(s.name, 'eot-after', tool, `${one}<|im_end|>`, 'call', [call], '', false, one);
        // after a short announcing sentence (the lead-in gate decides; either reading is fine)
        add(
          s.name,
          'lead-in',
          tool,
          `Let me do that now.\n\n${one}`,
          'either',
          [call],
          'Let me do that now.',
        );
      }
      // look-alikes
      const undeclared = s.one({ name: 'fetch_page', arguments: args });
      add(s.name, 'undeclared', tool, undeclared, 'content', []);
      add(
        s.name,
        'inline-code',
        tool,
        `Write it as \`${one.replaceAll('\n', ' ')}\` and the agent runs it.`,
        'content',
        [],
      );
      add(
        s.name,
        'fenced-example',
        tool,
        `For example:\n\n\`\`\`\n${one}\n\`\`\`\n\nThat is the whole format.`,
        'content',
        [],
      );
      add(s.name, 'cut', tool, one.slice(0, Math.floor(one.length * 0.6)), 'content', [], '', true);
    }
  }
  return out;
}
