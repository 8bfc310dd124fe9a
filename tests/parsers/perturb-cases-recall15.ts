/**
 * recall15: a held-out set written before any parser change of that round, for the calls small
 * open-weight models almost write in an agent's turn. Twelve agent-shaped tools are declared in
 * every case (a coding agent's set: nested object and array parameters, enums), and the arguments
 * are an agent's: shell commands with quotes, a tab escape and pipes, code with backticks,
 * template literals, `<` and backslashes, Markdown with a fence inside, unicode beyond the BMP, a
 * JSON document inside a string, a list of objects. Each format is one a small model writes (the
 * source beside it); each shape around the call (reasoning first, prose before or after, two
 * calls with prose between, a draft in the reasoning, a parallel list) is one those models are
 * seen writing; beside them the look-alikes that must stay text (a call shown in a fenced example
 * the answer goes on past, an undeclared tool, the tool's definition echoed, a JSON answer of the
 * arguments alone, a tool list). The truth is what a careful reader sees, not what the code reads.
 */
import type { JsonObject } from '../../protocol/openai.js';
import type { DeclaredTool } from '../../parsers/types.js';
import type { PerturbCase } from './perturb-cases.js';

const str = { type: 'string' };
const AGENT_TOOLS: DeclaredTool[] = [
  {
    name: 'bash',
    parameters: {
      type: 'object',
      properties: { command: str, timeout: { type: 'integer' }, description: str },
      required: ['command'],
    },
  },
  {
    name: 'read_file',
    parameters: {
      type: 'object',
      properties: { path: str, offset: { type: 'integer' }, limit: { type: 'integer' } },
      required: ['path'],
    },
  },
  {
    name: 'edit_file',
    parameters: {
      type: 'object',
      properties: { path: str, old_string: str, new_string: str, replace_all: { type: 'boolean' } },
      required: ['path', 'old_string', 'new_string'],
    },
  },
  {
    name: 'write_file',
    parameters: { type: 'object', properties: { path: str, content: str }, required: ['path', 'content'] },
  },
  {
    name: 'todo_write',
    parameters: {
      type: 'object',
      properties: {
        todos: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: str,
              content: str,
              status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] },
            },
            required: ['id', 'content', 'status'],
          },
        },
      },
      required: ['todos'],
    },
  },
  {
    name: 'grep',
    parameters: {
      type: 'object',
      properties: { pattern: str, path: str, include: { type: 'array', items: str } },
      required: ['pattern'],
    },
  },
  { name: 'glob', parameters: { type: 'object', properties: { pattern: str }, required: ['pattern'] } },
  {
    name: 'web_fetch',
    parameters: { type: 'object', properties: { url: str, prompt: str }, required: ['url', 'prompt'] },
  },
  {
    name: 'http_request',
    parameters: {
      type: 'object',
      properties: {
        method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'DELETE'] },
        url: str,
        headers: { type: 'object', additionalProperties: str },
        body: str,
      },
      required: ['method', 'url'],
    },
  },
  {
    name: 'ask_user',
    parameters: {
      type: 'object',
      properties: { question: str, options: { type: 'array', items: str } },
      required: ['question'],
    },
  },
  {
    name: 'task',
    parameters: {
      type: 'object',
      properties: { description: str, prompt: str, subagent_type: str },
      required: ['description', 'prompt', 'subagent_type'],
    },
  },
  { name: 'list_dir', parameters: { type: 'object', properties: { path: str }, required: ['path'] } },
];

export const RECALL15_TOOLS: ReadonlyMap<string, DeclaredTool> = new Map(AGENT_TOOLS.map((t) => [t.name, t]));

/** An agent's arguments: each holds what breaks a careless reader. */
const ARGS: Record<string, JsonObject> = {
  // quotes, a single-quoted sed script with a `\t` escape, pipes, an integer beside the string
  bash: {
    command: "grep -rn \"TODO(\" src/ | sed 's/\\t/ /g' | awk '{print $1}' | head -n 20",
    timeout: 30000,
  },
  // code with `<`, quotes of both kinds, a template literal, a backslash, unicode beyond the BMP
  edit_file: {
    path: 'src/util/strings.ts',
    old_string:
      'export function quote(s: string) {\n\tif (s.length < 1) return "";\n\treturn "\'" + s + "\'";\n}',
    new_string:
      // (a template literal's placeholder, spelled in two pieces so no linter takes it for one)
      'export function quote(s: string): string {\n\treturn `"$' +
      "{s.replaceAll('\"', '\\\\\"')}\"`; // café ✓ 日本語 😀\n}",
  },
  // Markdown with a fenced block inside the value, inline code, a Windows path
  write_file: {
    path: 'docs/USAGE.md',
    content:
      '# Usage\n\nRun the tests:\n\n```sh\nnpm test -- --grep "parser"\n```\n\nOn Windows the data sits in `C:\\Users\\dev\\app`.\n',
  },
  // a list of objects with an enum
  todo_write: {
    todos: [
      { id: '1', content: 'Read the parser', status: 'completed' },
      { id: '2', content: 'Fix the "fence" bug', status: 'in_progress' },
    ],
  },
  // a nested object, an enum, a JSON document inside a string, a query string with `&`
  http_request: {
    method: 'POST',
    url: 'https://api.example.com/v1/items?q=a&b=1',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer x' },
    body: '{"name": "widget", "tags": ["a", "b"]}',
  },
};
const TOOLS15 = Object.keys(ARGS);
/**
 * The shapes around a call (reasoning, prose, a second call, the look-alikes) are written for two
 * of the five (shell quoting, a fence inside a value): every shape for all five
 * cost the 1-char streams of perturb.test.ts half again their CPU for no other reading.
 */
const CONTEXT_TOOLS = new Set(['bash', 'write_file']);
/** The slips of the call itself, written for all five. */
const EVERY_TOOL = new Set([
  'clean',
  'after-own-reasoning',
  'nested-as-string',
  'raw-newlines',
  'ascii-escaped',
  'long-content',
]);
const SECOND = { name: 'read_file', arguments: { path: 'src/app.ts' } as JsonObject };

type Call = { name: string; arguments: JsonObject };

/** A Python literal (double-quoted strings, True / False / None), nested. */
function py(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(py).join(', ')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}: ${py(x)}`)
      .join(', ')}}`;
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null) return 'None';
  return JSON.stringify(v);
}
/** The arguments' text: JSON unless a slip spelled it (`spelled`). */
const argText = (c: Call) => (c as Call & { spelled?: string }).spelled ?? JSON.stringify(c.arguments);
const pyCall = (c: Call) =>
  `${c.name}(${Object.entries(c.arguments)
    .map(([k, v]) => `${k}=${py(v)}`)
    .join(', ')})`;
const raw = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

interface Format15 {
  name: string;
  /** A marker says a call is meant (prose beside it is no reason for doubt). */
  marked: boolean;
  /** Arguments written as JSON text (the JSON slips apply: `args` spells them). */
  json?: boolean;
  /** The template may open `<think>` first (Qwen3, the R1 distills, SmolLM3, Granite 4). */
  thinks: boolean;
  one(c: Call): string;
  /** What the format's output writes before its first call (a reasoning section; the clean case only). */
  lead?: string;
  /** Several calls in one envelope as the format writes them (all or nothing); without it one after another. */
  many?(cs: Call[]): string;
}

const jsonList = (cs: Call[], key = 'arguments') =>
  `[${cs.map((c) => `{"name": ${JSON.stringify(c.name)}, "${key}": ${argText(c)}}`).join(', ')}]`;

const FORMATS15: Format15[] = [
  {
    // Qwen2.5 / Qwen3 small, Hermes 3, SmolLM3 (huggingface/smol-course#259 quotes its template's
    // call), Granite 4: the Hermes envelope
    name: 'hermes',
    json: true,
    marked: true,
    thinks: true,
    one: (c) => `<tool_call>\n{"name": ${JSON.stringify(c.name)}, "arguments": ${argText(c)}}\n</tool_call>`,
  },
  {
    // Qwen3-Coder 30B-A3B and Qwen3.5 small (lablup/mlxcel#204: raw in content when unparsed)
    name: 'qwen3-coder',
    marked: true,
    thinks: true,
    one: (c) =>
      `<tool_call>\n<function=${c.name}>\n${Object.entries(c.arguments)
        .map(([k, v]) => `<parameter=${k}>\n${raw(v)}\n</parameter>\n`)
        .join('')}</function>\n</tool_call>`,
  },
  {
    // GLM-4.5-Air / GLM-4.6 (llama.cpp's and vLLM's glm45 parsers): values raw, arrays as JSON
    name: 'glm',
    marked: true,
    thinks: true,
    one: (c) =>
      `<tool_call>${c.name}\n${Object.entries(c.arguments)
        .map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${raw(v)}</arg_value>\n`)
        .join('')}</tool_call>`,
  },
  {
    // Mistral Nemo / Small 3.x (v3 tokenizer): one list after [TOOL_CALLS]
    name: 'mistral',
    json: true,
    marked: true,
    thinks: false,
    one: (c) => `[TOOL_CALLS]${jsonList([c])}`,
    many: (cs) => `[TOOL_CALLS]${jsonList(cs)}`,
  },
  {
    // Mistral Small 3.2 / Devstral Small (v11+): NAME[ARGS]{…} per call
    name: 'mistral-v11',
    json: true,
    marked: true,
    thinks: false,
    one: (c) => `[TOOL_CALLS]${c.name}[ARGS]${argText(c)}`,
  },
  {
    // Llama 3.2 1B/3B JSON calls (ollama/ollama#13519, meta-llama/llama-models#169)
    name: 'llama3-json',
    json: true,
    marked: false,
    thinks: false,
    one: (c) => `{"name": ${JSON.stringify(c.name)}, "parameters": ${argText(c)}}`,
  },
  {
    // Llama 3.x built-in JSON after <|python_tag|> (meta-llama/llama-models#169)
    name: 'llama3-python-tag',
    json: true,
    marked: true,
    thinks: false,
    one: (c) => `<|python_tag|>{"name": ${JSON.stringify(c.name)}, "parameters": ${argText(c)}}`,
  },
  {
    // Llama 3.2's pythonic list (meta-llama/llama-models#169: `[func1(a=1), func2(b=2)]`)
    name: 'pythonic',
    marked: false,
    thinks: false,
    one: (c) => `[${pyCall(c)}]`,
    many: (cs) => `[${cs.map(pyCall).join(', ')}]`,
  },
  {
    // Gemma 3 prompted for Python calls in a tool_code fence (Google's function-calling guide)
    name: 'gemma3-tool-code',
    marked: false,
    thinks: false,
    one: (c) => `\`\`\`tool_code\n${pyCall(c)}\n\`\`\``,
  },
  {
    // a JSON call in a ```json fence: Llama 3.2 under ollama (ollama/ollama#13519 "wrapped in code
    // blocks"), the R1 distills when the template has no call tokens they know
    name: 'fence-json',
    json: true,
    marked: false,
    thinks: true,
    one: (c) => `\`\`\`json\n{"name": ${JSON.stringify(c.name)}, "arguments": ${argText(c)}}\n\`\`\``,
  },
  {
    // Phi-4-mini `functools[…]` (vLLM phi4_mini_json; vllm-project/vllm#48795: nested arrays)
    name: 'phi4-mini',
    json: true,
    marked: true,
    thinks: false,
    one: (c) => `functools${jsonList([c])}`,
    many: (cs) => `functools${jsonList(cs)}`,
  },
  {
    // Phi-4-mini in its own tokens (ShishirPatil/gorilla#967's handler:
    // `<|tool_call|>[{"name": …, "arguments": …}]<|/tool_call|>`)
    name: 'phi4-mini-tokens',
    json: true,
    marked: true,
    thinks: false,
    one: (c) => `<|tool_call|>${jsonList([c])}<|/tool_call|>`,
    many: (cs) => `<|tool_call|>${jsonList(cs)}<|/tool_call|>`,
  },
  {
    // Granite 3.x: `<|tool_call|>[…]` with no close (vLLM granite)
    name: 'granite',
    json: true,
    marked: true,
    thinks: false,
    one: (c) => `<|tool_call|>${jsonList([c])}`,
    many: (cs) => `<|tool_call|>${jsonList(cs)}`,
  },
  {
    // DeepSeek-R1 distills under DeepSeek's template: a fenced JSON in the V3 section
    name: 'deepseek-r1',
    json: true,
    marked: true,
    thinks: true,
    one: (c) =>
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>${c.name}\n\`\`\`json\n${argText(c)}\n\`\`\`<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    many: (cs) =>
      `<｜tool▁calls▁begin｜>${cs
        .map(
          (c) =>
            `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${c.name}\n\`\`\`json\n${argText(c)}\n\`\`\`<｜tool▁call▁end｜>`,
        )
        .join('\n')}<｜tool▁calls▁end｜>`,
  },
  {
    // gpt-oss-20b: the analysis message, then the commentary call (the prompt ended `<|start|>assistant`)
    name: 'gpt-oss',
    json: true,
    marked: true,
    thinks: false,
    lead: '<|channel|>analysis<|message|>Need to run the tool first.<|end|><|start|>assistant',
    one: (c) =>
      `<|channel|>commentary to=functions.${c.name} <|constrain|>json<|message|>${argText(c)}<|call|>`,
  },
  {
    // Command R7B: its thinking section, then one action list (vLLM's cohere command parser tests)
    name: 'command-r7b',
    json: true,
    marked: true,
    thinks: false,
    lead: '<|START_THINKING|>I will use the tools.<|END_THINKING|>',
    one: (c) => commandR7b([c]),
    many: (cs) => commandR7b(cs),
  },
];

function commandR7b(cs: Call[]): string {
  const items = cs.map(
    (c, i) =>
      `    {"tool_call_id": "${i}", "tool_name": ${JSON.stringify(c.name)}, "parameters": ${argText(c)}}`,
  );
  return `<|START_ACTION|>[\n${items.join(',\n')}\n]<|END_ACTION|>`;
}

export function recall15Cases(): PerturbCase[] {
  const out: PerturbCase[] = [];
  const add = (
    format: string,
    perturbation: string,
    tool: string,
    text: string,
    truth: PerturbCase['truth'],
    calls: Call[],
    prose = '',
  ) => {
    if (format !== 'json-answer' && !CONTEXT_TOOLS.has(tool) && !EVERY_TOOL.has(perturbation)) return;
    out.push({
      id: `recall15/${format}/${perturbation}/${tool}`,
      format: `${format}*`,
      perturbation,
      text,
      cut: false,
      truth,
      calls,
      prose,
      set: 'recall15',
      tools: RECALL15_TOOLS,
    });
  };

  for (const f of FORMATS15) {
    const many = f.many ?? ((cs: Call[]) => cs.map(f.one).join('\n'));
    const soft = f.marked ? 'call' : 'either';
    for (const tool of TOOLS15) {
      const call: Call = { name: tool, arguments: ARGS[tool] as JsonObject };
      const one = f.one(call);
      const fence = one.includes('```') ? '````' : '```';
      // the agent's call alone, twelve tools declared
      add(f.name, 'clean', tool, one, 'call', [call]);
      // after the format's own reasoning section (gpt-oss's analysis message, Command R7B's thinking)
      if (f.lead !== undefined) add(f.name, 'after-own-reasoning', tool, f.lead + one, 'call', [call]);
      // a reasoning section first (Qwen3, the R1 distills, SmolLM3 and Granite 4 think first)
      if (f.thinks)
        add(
          f.name,
          'think-first',
          tool,
          `<think>\nThe user wants this changed. I should call ${tool} with the right arguments.\n</think>\n\n${one}`,
          'call',
          [call],
        );
      // a draft of another call in the reasoning, then the call meant: the draft stays reasoning
      if (f.thinks)
        add(
          f.name,
          'draft-in-think',
          tool,
          `<think>\nMaybe ${f.one(SECOND)} first? No, the user said what to change.\n</think>\n${one}`,
          'call',
          [call],
        );
      // an announcing sentence before the call
      add(
        f.name,
        'prose-before',
        tool,
        `I'll take care of that now.\n\n${one}`,
        soft,
        [call],
        "I'll take care of that now.",
      );
      // a sentence after the call (what the model expects it to do)
      add(
        f.name,
        'prose-after',
        tool,
        `${one}\n\nThis should take care of it.`,
        soft,
        [call],
        'This should take care of it.',
      );
      // two calls, prose between them (a small model narrating its plan)
      add(
        f.name,
        'two-calls-prose-between',
        tool,
        `${f.one(SECOND)}\n\nThen I will make the change.\n\n${one}`,
        soft,
        [SECOND, call],
        'Then I will make the change.',
      );
      // two calls in one output, as the format writes several
      add(f.name, 'parallel', tool, many([SECOND, call]), f.marked || f.many ? 'call' : 'either', [
        SECOND,
        call,
      ]);
      // the call after the agent's own code block (a diff shown, then the edit made)
      add(
        f.name,
        'after-code-block',
        tool,
        `The fix:\n\n\`\`\`ts\nconst a = "x";\n\`\`\`\n\n${one}`,
        soft,
        [call],
        'The fix: ```ts const a = "x"; ```',
      );
      // look-alikes that must stay text
      add(
        f.name,
        'fenced-example',
        tool,
        `Here is what such a call looks like:\n\n${fence}\n${one}\n${fence}\n\nYou can adapt it to your own agent.`,
        'content',
        [],
      );
      add(
        f.name,
        'undeclared',
        tool,
        f.one({ name: 'run_terminal_cmd', arguments: call.arguments }),
        'content',
        [],
      );
      // a declared call beside an undeclared one: one envelope is all or nothing; apart, the
      // declared one is a call and the other stays text
      const stray = { name: 'run_terminal_cmd', arguments: call.arguments };
      if (f.many) add(f.name, 'undeclared-beside-declared', tool, many([SECOND, stray]), 'content', []);
      else
        add(f.name, 'undeclared-beside-declared', tool, many([SECOND, stray]), soft, [SECOND], f.one(stray));
      // slips small models make on an agent's arguments (JSON formats)
      const spelled = (text: string): Call => ({ ...call, spelled: text }) as Call;
      if (f.json) {
        const nested = Object.entries(call.arguments).filter(([, v]) => v !== null && typeof v === 'object');
        if (nested.length > 0) {
          // an array or object parameter written as a string holding its JSON (Llama 3.2 and Qwen2.5
          // small; vLLM's and SGLang's suites read such values for their declared type)
          const asString = Object.fromEntries(
            Object.entries(call.arguments).map(([k, v]) => [
              k,
              v !== null && typeof v === 'object' ? JSON.stringify(v) : v,
            ]),
          );
          add(f.name, 'nested-as-string', tool, f.one(spelled(JSON.stringify(asString))), 'call', [call]);
        }
        const json = JSON.stringify(call.arguments);
        if (json.includes('\\n')) {
          // line breaks in code written raw inside the JSON string (Qwen2.5-Coder small, Llama 3.2)
          add(
            f.name,
            'raw-newlines',
            tool,
            f.one(spelled(json.replaceAll('\\n', '\n').replaceAll('\\t', '\t'))),
            'call',
            [call],
          );
        }
        if (/[^\x00-\x7f]/.test(json)) {
          // Python's json.dumps default: every non-ASCII character as \uXXXX (surrogate pairs beyond the BMP)
          const ascii = json.replace(
            /[^\x00-\x7f]/g,
            (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
          );
          add(f.name, 'ascii-escaped', tool, f.one(spelled(ascii)), 'call', [call]);
        }
      }
      if (f.name === 'hermes') {
        // two calls as one JSON list inside one block (Qwen2.5 small under the Hermes template)
        add(
          f.name,
          'list-in-one-block',
          tool,
          `<tool_call>\n${jsonList([SECOND, call])}\n</tool_call>`,
          'call',
          [SECOND, call],
        );
        // the Llama key for the arguments inside the Hermes block (Llama 3.2 under a Hermes-style template)
        add(
          f.name,
          'parameters-key',
          tool,
          `<tool_call>\n{"name": "${tool}", "parameters": ${JSON.stringify(call.arguments)}}\n</tool_call>`,
          'call',
          [call],
        );
      }
      if (f.thinks && f.marked) {
        // the call written only inside the reasoning, nothing after it (an R1 distill that ends its turn there)
        add(f.name, 'call-only-in-think', tool, `<think>\nI need to do this now.\n${one}\n</think>`, 'call', [
          call,
        ]);
      }
      if (f.thinks) {
        // Qwen3's no-think turn: an empty reasoning section, then the call
        add(f.name, 'empty-think', tool, `<think>\n\n</think>\n\n${one}`, 'call', [call]);
      }
      if (tool === 'write_file') {
        // a long file written in one call (an agent's write: 80 lines of code)
        const lines = Array.from(
          { length: 80 },
          (_, i) =>
            `export const v${i} = "${i % 7 === 0 ? 'a\\b' : 'x'}"; // <${i}> ${i % 11 === 0 ? '日本' : ''}`,
        );
        const long = { name: tool, arguments: { path: 'src/gen.ts', content: `${lines.join('\n')}\n` } };
        add(f.name, 'long-content', tool, f.one(long), 'call', [long]);
      }
    }
  }

  // JSON answers that look like calls but are not (no format; the text as it came)
  const bashSchema = AGENT_TOOLS[0]?.parameters as JsonObject;
  const answers: [string, string][] = [
    // the tool's definition echoed back (asked "what does the bash tool take?")
    ['definition-echoed', JSON.stringify({ name: 'bash', parameters: bashSchema }, null, 2)],
    // a tool list asked for as JSON
    [
      'tool-list',
      JSON.stringify([
        { name: 'bash', description: 'Run a shell command' },
        { name: 'read_file', description: 'Read a file' },
      ]),
    ],
    // the arguments alone, no name (asked for a config as JSON)
    ['arguments-alone', JSON.stringify(ARGS.http_request, null, 2)],
    // a JSON answer with a `name` that is no tool
    ['name-not-a-tool', '{"name": "widget", "arguments": {"size": 3}}'],
    // a call explained in a sentence, inline code
    [
      'inline-code-sample',
      'Call it as `{"name": "read_file", "parameters": {"path": "src/app.ts"}}` and the agent reads the file.',
    ],
    // a Python snippet that calls a function named like a tool, in a fence the answer explains
    [
      'python-snippet',
      'In your script:\n\n```python\nresult = bash(command="ls -la")\nprint(result)\n```\n\nThat runs it locally.',
    ],
  ];
  for (const [what, text] of answers) add('json-answer', what, 'none', text, 'content', []);
  return out;
}
