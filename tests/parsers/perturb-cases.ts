/**
 * Generated leak-recovery cases (recall7): the published call formats written for a few
 * schemas, then perturbed the way small models perturb them. Each case carries the truth a
 * careful human reads:
 * - `call`: the calls are sure (a declared tool, arguments that fit once the slip is undone);
 * - `content`: no call may be read (an explained sample, a call cut by the token limit, a bare
 *   call with prose after it, which the docs keep as text on purpose): the text stays, byte for byte;
 * - `either`: a human could not be sure; both readings are fine, only a wrong call is a defect.
 *
 * `classify` reads a case whole and streamed at several chunkings (bench/perturb.ts prints the
 * counts per format; tests/parsers/perturb.test.ts guards what must hold).
 */
import type { JsonObject } from '../../protocol/openai.js';
import type { RecoveryResult } from '../../parsers/recover.js';
import { collectEvents, createRecoveryStream, recoverMessage } from '../../parsers/recover.js';
import { scanJsonValue } from '../../parsers/kit/json-scan.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { recall15Cases } from './perturb-cases-recall15.js';
import { recall16Cases } from './perturb-cases-recall16.js';
import { recall17Cases } from './perturb-cases-recall17.js';
import { recall18Cases } from './perturb-cases-recall18.js';

type Truth = 'call' | 'content' | 'either';

export interface PerturbCase {
  id: string;
  format: string;
  perturbation: string;
  text: string;
  cut: boolean;
  truth: Truth;
  /** The calls meant (for `call` and `either`). */
  calls: { name: string; arguments: JsonObject }[];
  /** The prose around the calls: the content once they are read (blanks aside). */
  prose: string;
  /** Which session's generator first wrote the case ('recall9' … 'recall12' for the shapes added then). */
  set:
    | 'recall8'
    | 'recall9'
    | 'recall10'
    | 'recall11'
    | 'recall12'
    | 'recall14'
    | 'recall15'
    | 'recall16'
    | 'recall17'
    | 'recall18';
  /** The tools the request declares (default PERTURB_TOOLS; recall15 declares an agent's twelve). */
  tools?: ReadonlyMap<string, DeclaredTool>;
  /** Upstream reasoning_content beside the text (recall11's call split across the two). */
  reasoning?: string;
  /** Besides the text itself, what a case with no call may keep as content (a special token dropped). */
  kept?: string;
  /** recall14: with no call read, the text may go whole to reasoning (a leading `<think>` left open). */
  toReasoning?: boolean;
}

const TOOLS: DeclaredTool[] = [
  {
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
    },
  },
  {
    name: 'search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer' }, exact: { type: 'boolean' } },
      required: ['query', 'limit'],
    },
  },
  {
    name: 'write_file',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
];

export const PERTURB_TOOLS: ReadonlyMap<string, DeclaredTool> = new Map(TOOLS.map((t) => [t.name, t]));

const ARGS: Record<string, JsonObject> = {
  read_file: { path: 'src/app.ts' },
  get_weather: { city: 'Paris', unit: 'celsius' },
  search: { query: 'tool calling', limit: 5, exact: true },
  write_file: { path: 'notes.md', content: 'line one\nsay "hi" twice' },
};

/** How the arguments object is spelled (the perturbations of JSON). */
type ArgStyle =
  | 'json'
  | 'trailing-comma'
  | 'single-quotes'
  | 'python-literals'
  | 'raw-newline'
  | 'raw-quotes'
  | 'string-arguments'
  | 'quoted-number'
  | 'unquoted-keys'
  | 'over-escaped';

function pyValue(v: unknown, quote: string): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null) return 'None';
  if (typeof v === 'string') {
    const esc = v.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll(quote, `\\${quote}`);
    return quote + esc + quote;
  }
  return JSON.stringify(v);
}

export function spellArgs(args: JsonObject, style: ArgStyle): string {
  const entries = Object.entries(args);
  switch (style) {
    case 'json':
      return JSON.stringify(args);
    case 'trailing-comma':
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(', ')},}`;
    case 'single-quotes':
      return `{${entries.map(([k, v]) => `'${k}': ${typeof v === 'string' ? pyValue(v, "'") : JSON.stringify(v)}`).join(', ')}}`;
    case 'python-literals':
      return `{${entries.map(([k, v]) => `"${k}": ${pyValue(v, '"')}`).join(', ')}}`;
    case 'raw-newline':
      return `{${entries.map(([k, v]) => `"${k}": ${typeof v === 'string' ? `"${v.replaceAll('"', '\\"')}"` : JSON.stringify(v)}`).join(', ')}}`;
    case 'raw-quotes':
      return `{${entries.map(([k, v]) => `"${k}": ${typeof v === 'string' ? `"${v.replaceAll('\n', '\\n')}"` : JSON.stringify(v)}`).join(', ')}}`;
    case 'string-arguments':
      return JSON.stringify(JSON.stringify(args));
    case 'quoted-number':
      return `{${entries.map(([k, v]) => `"${k}": ${typeof v === 'number' ? `"${v}"` : JSON.stringify(v)}`).join(', ')}}`;
    case 'unquoted-keys':
      return `{${entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')}}`;
    case 'over-escaped':
      return JSON.stringify(args).replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  }
}

/** One envelope: what opens it, the body, what closes it (so a perturbation can drop or misspell the close). */
interface Written {
  open: string;
  body: string;
  close: string;
}

interface Format {
  name: string;
  /** Arguments spelled as a JSON-ish object (the JSON perturbations apply). */
  json: boolean;
  /** A marker says a call is meant: prose after it is content, not a reason for doubt. */
  marked: boolean;
  write(name: string, args: JsonObject, argText: string): Written;
  /** A misspelling of the close (undefined: the format has no close to misspell). */
  misspell?: (close: string) => string;
  /** Two calls: glued as two envelopes (default) or inside one. */
  glue?: (a: Written, b: Written) => string;
  /** The envelope with its opening token dropped, the close kept (where the name is not in it). */
  dropOpen?: (w: Written) => string;
}

const xmlValue = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

const FORMATS: Format[] = [
  {
    name: 'hermes',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: '<tool_call>\n',
      body: `{"name": "${n}", "arguments": ${t}}`,
      close: '\n</tool_call>',
    }),
    misspell: (c) => c.replace('</tool_call>', '</tool_cal>'),
    dropOpen: (w) => w.body + w.close,
  },
  {
    name: 'qwen3-coder',
    json: false,
    marked: true,
    write: (n, a) => ({
      open: `<tool_call>\n<function=${n}>\n`,
      body: Object.entries(a)
        .map(([k, v]) => `<parameter=${k}>\n${xmlValue(v)}\n</parameter>\n`)
        .join(''),
      close: '</function>\n</tool_call>',
    }),
    misspell: (c) => c.replace('</function>', '</functon>'),
    dropOpen: (w) => w.open.replace('<tool_call>\n', '') + w.body + w.close,
  },
  {
    name: 'mistral',
    json: true,
    marked: true,
    write: (n, _a, t) => ({ open: '[TOOL_CALLS]', body: `[{"name": "${n}", "arguments": ${t}}]`, close: '' }),
    glue: (a, b) => `${a.open}${a.body.slice(0, -1)}${b.body.slice(1)}`,
  },
  {
    name: 'mistral-v11',
    json: true,
    marked: true,
    write: (n, _a, t) => ({ open: '[TOOL_CALLS]', body: `${n}[ARGS]${t}`, close: '' }),
  },
  {
    name: 'llama3-python-tag',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: '<|python_tag|>',
      body: `{"name": "${n}", "parameters": ${t}}`,
      close: '',
    }),
    glue: (a, b) => `${a.open}${a.body}; ${b.body}`,
  },
  {
    name: 'llama3-json',
    json: true,
    marked: false,
    write: (n, _a, t) => ({ open: '', body: `{"name": "${n}", "parameters": ${t}}`, close: '' }),
  },
  {
    name: 'deepseek-v3',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>',
      body: `${n}\n\`\`\`json\n${t}\n\`\`\``,
      close: '<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    }),
    misspell: (c) => c.replace('<｜tool▁calls▁end｜>', '<｜tool_calls_end｜>'),
  },
  {
    name: 'deepseek-v31',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>',
      body: `${n}<｜tool▁sep｜>${t}`,
      close: '<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    }),
  },
  {
    name: 'glm',
    json: false,
    marked: true,
    write: (n, a) => ({
      open: `<tool_call>${n}\n`,
      body: Object.entries(a)
        .map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${xmlValue(v)}</arg_value>\n`)
        .join(''),
      close: '</tool_call>',
    }),
    misspell: (c) => c.replace('</tool_call>', '</tool_cal>'),
  },
  {
    name: 'kimi-k2',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: '<|tool_calls_section_begin|><|tool_call_begin|>',
      body: `functions.${n}:0<|tool_call_argument_begin|>${t}`,
      close: '<|tool_call_end|><|tool_calls_section_end|>',
    }),
  },
  {
    name: 'gpt-oss',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: `<|start|>assistant<|channel|>commentary to=functions.${n} <|constrain|>json<|message|>`,
      body: t,
      close: '<|call|>',
    }),
  },
  {
    name: 'granite',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: '<|tool_call|>',
      body: `[{"name": "${n}", "arguments": ${t}}]`,
      close: '',
    }),
    glue: (a, b) => `${a.open}${a.body.slice(0, -1)}, ${b.body.slice(1)}`,
  },
  {
    name: 'functionary',
    json: true,
    marked: true,
    write: (n, _a, t) => ({ open: `<function=${n}>`, body: t, close: '</function>' }),
    misspell: (c) => c.replace('</function>', '</functon>'),
  },
  {
    name: 'functionary-v3-2',
    json: true,
    marked: true,
    write: (n, _a, t) => ({ open: '>>>', body: `${n}\n${t}`, close: '' }),
  },
  {
    name: 'fence',
    json: true,
    marked: false,
    write: (n, _a, t) => ({ open: '```json\n', body: `{"name": "${n}", "arguments": ${t}}`, close: '\n```' }),
  },
  {
    // DeepSeek V3.2 DSML (added by recall9, for its bar variants below)
    name: 'deepseek-v32',
    json: false,
    marked: true,
    write: (n, a) => ({
      open: `<｜DSML｜function_calls>\n<｜DSML｜invoke name="${n}">\n`,
      body: Object.entries(a)
        .map(
          ([k, v]) =>
            `<｜DSML｜parameter name="${k}" string="${typeof v === 'string'}">${xmlValue(v)}</｜DSML｜parameter>\n`,
        )
        .join(''),
      close: '</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    }),
  },
  {
    name: 'improvised-pythonic',
    json: false,
    marked: false,
    write: (n, a) => ({
      open: '',
      body: `${n}(${Object.entries(a)
        .map(([k, v]) => `${k}=${pyValue(v, '"')}`)
        .join(', ')})`,
      close: '',
    }),
  },
  {
    // the envelope a prompt asks for instead of native calls (seed 001: a 4B model's decision
    // module, schema B `{"content": "", "tool_calls": [{"id", "name", "args"}]}`)
    name: 'prompted-envelope',
    json: true,
    marked: false,
    write: (n, _a, t) => ({
      open: '',
      body: `{"content": "", "tool_calls": [{"id": "call_001", "name": "${n}", "args": ${t}}]}`,
      close: '',
    }),
  },
  {
    name: 'improvised-tool-input',
    json: true,
    marked: false,
    write: (n, _a, t) => ({ open: '', body: `{"tool": "${n}", "tool_input": ${t}}`, close: '' }),
  },
];

const whole = (w: Written) => w.open + w.body + w.close;

/**
 * Published formats the earlier sets did not write (recall14 only): Seed-OSS and MiniMax-M2
 * (llama.cpp's chat parsers and vLLM's tool parsers spell them so), Phi-4-mini's `functools[…]`
 * and Command R+'s `Action:` fence (vLLM's parser tests).
 */
const FORMATS14: Format[] = [
  {
    name: 'seed-oss',
    json: false,
    marked: true,
    write: (n, a) => ({
      open: `<seed:tool_call>\n<function=${n}>\n`,
      body: Object.entries(a)
        .map(([k, v]) => `<parameter=${k}>${xmlValue(v)}</parameter>\n`)
        .join(''),
      close: '</function>\n</seed:tool_call>',
    }),
  },
  {
    name: 'minimax-m2',
    json: false,
    marked: true,
    write: (n, a) => ({
      open: `<minimax:tool_call>\n<invoke name="${n}">\n`,
      body: Object.entries(a)
        .map(([k, v]) => `<parameter name="${k}">${xmlValue(v)}</parameter>\n`)
        .join(''),
      close: '</invoke>\n</minimax:tool_call>',
    }),
  },
  {
    name: 'phi4-mini',
    json: true,
    marked: true,
    write: (n, _a, t) => ({ open: 'functools', body: `[{"name": "${n}", "arguments": ${t}}]`, close: '' }),
  },
  {
    name: 'command-r-plus',
    json: true,
    marked: true,
    write: (n, _a, t) => ({
      open: 'Action:\n```json\n',
      body: `[\n    {\n        "tool_name": "${n}",\n        "parameters": ${t}\n    }\n]`,
      close: '\n```',
    }),
  },
];

/** Case and namespace slips of a tool name. */
const renamed: [string, (n: string) => string][] = [
  [
    'name-case',
    (n) =>
      n
        .split('_')
        .map((p) => p[0]?.toUpperCase() + p.slice(1))
        .join('_'),
  ],
  ['name-upper', (n) => n.toUpperCase()],
  ['name-prefix', (n) => `functions.${n}`],
  ['name-prefix-default-api', (n) => `default_api.${n}`],
];

/** End-of-turn tokens each format's template writes after a call (recall12's `end-token-written`). */
const EOS: Record<string, string> = {
  hermes: '<|im_end|>',
  'qwen3-coder': '<|im_end|>',
  mistral: '</s>',
  'mistral-v11': '</s>',
  'llama3-python-tag': '<|eom_id|>',
  'llama3-json': '<|eot_id|>',
  'deepseek-v3': '<｜end▁of▁sentence｜>',
  'deepseek-v31': '<｜end▁of▁sentence｜>',
  'deepseek-v32': '<｜end▁of▁sentence｜>',
  glm: '<|observation|>',
  'kimi-k2': '<|im_end|>',
  granite: '<|end_of_text|>',
  functionary: '<|eot_id|>',
  'functionary-v3-2': '<|eot_id|>',
  fence: '<|im_end|>',
  'improvised-pythonic': '<|im_end|>',
  'prompted-envelope': '<|im_end|>',
  'improvised-tool-input': '<|eot_id|>',
};

/** Names one slip from a declared one: a letter dropped, a plural, camelCase, a hyphen. */
function nearNames(tool: string): [string, string][] {
  const out: [string, string][] = [
    ['near-name-typo', tool.slice(0, 2) + tool.slice(3)],
    ['near-name-plural', `${tool}s`],
  ];
  const camel = tool.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  if (camel !== tool) out.push(['near-name-camel', camel], ['near-name-hyphen', tool.replaceAll('_', '-')]);
  return out;
}

/** A value printed the way Python's repr prints it (single quotes, True / False / None). */
function pyRepr(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${pyValue(k, "'")}: ${pyRepr(x)}`)
      .join(', ')}}`;
  return pyValue(v, "'");
}

export function generateCases(): PerturbCase[] {
  const out: PerturbCase[] = [];
  /**
   * recall8: slips the generator did not write before, each from a report of small models'
   * output (the source in a comment). Marked formats keep text after the envelope as content.
   */
  const addUnseen = (
    f: Format,
    tool: string,
    plain: Written,
    w: (name?: string, style?: ArgStyle) => Written,
    call: PerturbCase['calls'],
  ) => {
    // ollama/ollama#16686, jundot/omlx#844: Qwen3-Coder drops the opening <tool_call> and keeps
    // the closing one; seed 000: a 0.5B model dropped the Hermes tags about 1 in 5
    if (f.dropOpen) add(f, 'missing-open', tool, f.dropOpen(plain), 'call', call);
    if (!f.json) return;
    // langchain-ai/langchain-gradient#31 (gpt-oss-20b): quotes escaped outside any string
    add(f, 'over-escaped', tool, whole(w(tool, 'over-escaped')), 'call', call);
    // NousResearch/hermes-agent#7449 (Gemma 4): keys without quotes, a JavaScript object literal
    add(f, 'unquoted-keys', tool, whole(w(tool, 'unquoted-keys')), 'call', call);
    const json = whole(plain);
    const objectBody = plain.body.includes('{"name": ');
    if (objectBody) {
      // vllm-project/vllm#46863 (Llama 4 Scout): {"type": "function", "name": …, "parameters": …}
      add(f, 'type-function', tool, json.replace('{"name": ', '{"type": "function", "name": '), 'call', call);
      // seed 001 (a 4B model prompted for {"name", "args"}): another key for the arguments
      add(f, 'args-key', tool, json.replace(/"(arguments|parameters)": /, '"args": '), 'call', call);
    }
    if (plain.close !== '' && plain.body.trimEnd().endsWith('}')) {
      const body = plain.body.trimEnd();
      // ollama/ollama#14180 (gpt-oss:20b): the last closing brace left out before the end marker
      add(f, 'missing-brace', tool, plain.open + body.slice(0, -1) + plain.close, 'call', call);
      // yigit353/langchain-qwq#30 (QwQ): one closing brace too many
      add(f, 'extra-brace', tool, `${plain.open}${body}}${plain.close}`, 'call', call);
    }
    // seed 001: the JSON followed by a stray closing fence, no opening one
    if (!f.marked && f.name !== 'fence') add(f, 'stray-fence-close', tool, `${json}\n\`\`\``, 'call', call);
  };
  let set: PerturbCase['set'] = 'recall8';
  const add = (
    f: Format,
    perturbation: string,
    tool: string,
    text: string,
    truth: Truth,
    calls: PerturbCase['calls'],
    cut = false,
    prose = '',
    reasoning?: string,
    kept?: string,
  ) =>
    out.push({
      id: `${f.name}/${perturbation}/${tool}`,
      format: f.name,
      perturbation,
      text,
      cut,
      truth,
      calls,
      prose,
      set,
      ...(reasoning !== undefined ? { reasoning } : {}),
      ...(kept !== undefined ? { kept } : {}),
    });
  /**
   * recall9: near misses from real output the generator did not write (source beside each), each
   * with the negatives that must stay text: the same slip for an undeclared tool, with arguments
   * that fit no schema, and shown in a fenced block an explanation goes on past.
   */
  const addRecall9 = (f: Format, tool: string, plain: Written, call: PerturbCase['calls']) => {
    const args = ARGS[tool] as JsonObject;
    const slips: [string, (w: Written) => string][] = [];
    if (f.json && plain.body.includes('{"name": ')) {
      // the whole call object escaped once too often (langchain-ai/langchain-gradient#31 saw the
      // arguments so; the object around them too is the same slip one level up)
      slips.push(['over-escaped-call', (w) => w.open + JSON.stringify(w.body).slice(1, -1) + w.close]);
    }
    if (f.name === 'glm') {
      // vllm-project/vllm#54971 (GLM-4.7): an argument tag written twice
      slips.push(['doubled-key-close', (w) => whole(w).replaceAll('</arg_key>', '</arg_key></arg_key>')]);
      slips.push(['doubled-key-open', (w) => whole(w).replaceAll('<arg_key>', '<arg_key><arg_key>')]);
      // getsigit/sigit#95 (GLM): `<tool_call>` where the first `<arg_key>` belongs
      slips.push(['tool-call-for-arg-key', (w) => whole(w).replace('\n<arg_key>', '<tool_call>')]);
    }
    if (f.name === 'deepseek-v32') {
      // lsdefine/GenericAgent#804, adolfousier/opencrabs#419: the DSML bar spelled otherwise
      for (const [what, bar] of [
        ['dsml-double-bar', '｜｜'],
        ['dsml-u2016-bar', '‖'],
        ['dsml-ascii-bar', '|'],
      ] as const)
        slips.push([what, (w) => whole(w).replaceAll('｜DSML｜', `${bar}DSML${bar}`)]);
    }
    const spell = (name: string, a: JsonObject) => f.write(name, a, spellArgs(a, 'json'));
    for (const [what, slip] of slips) {
      add(f, what, tool, slip(plain), 'call', call);
      add(f, `${what}-undeclared`, tool, slip(spell('delete_files', args)), 'content', []);
      add(f, `${what}-misfit`, tool, slip(spell(tool, { nope: 'x' })), 'content', []);
      add(
        f,
        `${what}-fenced-sample`,
        tool,
        `A call looks like this:\n\n\`\`\`\n${slip(plain)}\n\`\`\`\n\nThe server reads it for you.`,
        'content',
        [],
      );
    }
    if (f.marked) {
      // NousResearch/hermes-agent#83379 (qwen-35b-a3b under llama-server): after the call the
      // model writes the tool's output itself and goes on; the call is read, the made-up output
      // stays content byte for byte
      const fake = '<tool_response>\n{"ok": true}\n</tool_response>\nThe file is empty.';
      add(f, 'fabricated-response', tool, `${whole(plain)}\n${fake}`, 'call', call, false, fake);
      // prose that names the tool is no call
      add(
        f,
        'prose-mentions-tool',
        tool,
        `I could use ${tool} for that, but the answer is already above.`,
        'content',
        [],
      );
    }
  };

  /**
   * recall10: shapes from real output (source beside each), with the negatives beside them (the
   * slip for an undeclared tool, with arguments that fit no schema, in a fenced sample an
   * explanation goes on past).
   */
  const addRecall10 = (f: Format, tool: string, plain: Written, call: PerturbCase['calls']) => {
    const args = ARGS[tool] as JsonObject;
    const slips: [string, (w: Written) => string][] = [];
    if (f.name === 'deepseek-v32') {
      // CommandCodeAI/command-code#909, cline/cline#14057: two bars and a blank, the block `calls`
      slips.push([
        'dsml-spaced-calls',
        (w) => whole(w).replaceAll('｜DSML｜', '｜｜DSML｜｜ ').replaceAll('function_calls>', 'calls>'),
      ]);
      // vllm-project/vllm#51914 (DeepSeek-V4-Flash-0731): `<｜DSML｜toolcalls>` … `</｜DSML｜tool_calls>`
      slips.push([
        'dsml-toolcalls-open',
        (w) =>
          whole(w)
            .replace('<｜DSML｜function_calls>', '<｜DSML｜toolcalls>')
            .replace('</｜DSML｜function_calls>', '</｜DSML｜tool_calls>'),
      ]);
    }
    if (f.name === 'mistral-v11') {
      // ml-explore/mlx-lm#1448, unslothai/unsloth#5704: the first [TOOL_CALLS] dropped
      slips.push(['missing-call-marker', (w) => w.body]);
    }
    if (!f.marked && plain.body.startsWith('{') && plain.open === '') {
      // a bare call after paragraphs of the model's own prose (recall9 left it text)
      const preface =
        'I went through the project files and the recent changes. The sources sit under src and the tests under tests, and the entry point is small. The settings file sets the port and the log level, and nothing in it looks odd. The last change touched the router and the logging setup, and the logs show the failures began right after it was deployed. The tests for the router still pass on the old build.\n\nThe failing request goes through the router, so that is where I start.';
      slips.push(['long-preface', (w) => `${preface}\n\nChecking it now.\n${whole(w)}`]);
      slips.push([
        'long-preface-explains',
        (w) => `${preface}\n\nYou would write the call like this:\n${whole(w)}`,
      ]);
    }
    const spell = (name: string, a: JsonObject) => f.write(name, a, spellArgs(a, 'json'));
    for (const [what, slip] of slips) {
      const explains = what.endsWith('-explains');
      const prose = what.startsWith('long-preface') ? slip({ open: '', body: '', close: '' }).trim() : '';
      add(f, what, tool, slip(plain), explains ? 'content' : 'call', explains ? [] : call, false, prose);
      if (explains) continue;
      add(f, `${what}-undeclared`, tool, slip(spell('delete_files', args)), 'content', []);
      add(f, `${what}-misfit`, tool, slip(spell(tool, { nope: 'x' })), 'content', []);
      add(
        f,
        `${what}-fenced-sample`,
        tool,
        `A call looks like this:\n\n\`\`\`\n${slip(plain)}\n\`\`\`\n\nThe server reads it for you.`,
        'content',
        [],
      );
    }
  };

  /**
   * recall11: the known misses recall10 left (DSML invokes without their block, DSML spelled with
   * blanks around ASCII or fullwidth bars, Mistral call objects without the list's brackets) and
   * slips no set wrote yet, each with the negatives beside it (the slip for an undeclared tool,
   * with arguments that fit no schema, in a fenced sample an explanation goes on past). A slip no
   * source shows is `either`: only a wrong call is a defect there.
   */
  const addRecall11 = (f: Format, tool: string, plain: Written, call: PerturbCase['calls']) => {
    const args = ARGS[tool] as JsonObject;
    const other = tool === 'read_file' ? 'get_weather' : 'read_file';
    const otherCall = { name: other, arguments: ARGS[other] as JsonObject };
    const hermes = FORMATS[0] as Format;
    /**
     * Per slip: its truth, the calls meant, and which negatives apply (`standard`: the slip leaves
     * the format's own envelope whole, whose reading takes a declared name with any object
     * arguments, so arguments that fit no schema are no negative there; `none`: the slip adds a
     * call of its own or a fence a fenced sample would break).
     */
    type Neg = 'all' | 'standard' | 'none';
    const slips: [string, (w: Written) => string, Truth, PerturbCase['calls']?, Neg?][] = [];
    if (f.name === 'deepseek-v32') {
      // sgl-project/sglang#40236 (90 of 455 fuzzed shapes), Wei-Shaw/sub2api#6042 (the opener
      // eaten, the rest streamed as text): invokes without their block, the closer kept or not
      const bare = (w: Written) =>
        w.open.replace('<｜DSML｜function_calls>\n', '') + w.body + '</｜DSML｜invoke>';
      slips.push(['dsml-bare-invoke', bare, 'call']);
      slips.push(['dsml-bare-invoke-closer', (w) => `${bare(w)}\n</｜DSML｜function_calls>`, 'call']);
      // AgentFlocks/flocks#687, NousResearch/hermes-agent#15453: blanks around ASCII bars
      slips.push(['dsml-spaced-ascii', (w) => whole(w).replaceAll('｜DSML｜', ' | DSML | '), 'call']);
      // the same with the fullwidth bar (no source shows it; the brief's "other spacing")
      slips.push(['dsml-spaced-fullwidth', (w) => whole(w).replaceAll('｜DSML｜', ' ｜ DSML ｜ '), 'either']);
    }
    if (f.name === 'mistral') {
      // `[TOOL_CALLS] {…}, {…}`: objects without the list's brackets (recall9 and recall10 left it)
      const second = `{"name": "${other}", "arguments": ${JSON.stringify(ARGS[other])}}`;
      slips.push([
        'unbracketed-list',
        (w) => `${w.open} ${w.body.slice(1, -1)}, ${second}`,
        'call',
        [...call, otherCall],
      ]);
    }
    if (f.marked && plain.close !== '') {
      // warpfront/hipfire#750 (Qwen): the closing tag written twice after a complete call
      slips.push(['doubled-close', (w) => whole(w) + w.close.trim(), 'call', call, 'standard']);
    }
    if (f.marked && plain.open !== '') {
      // the opening token written twice (no source shows it)
      slips.push(['doubled-open', (w) => w.open.trimEnd() + whole(w), 'either', call, 'standard']);
    }
    if (['hermes', 'qwen3-coder', 'glm', 'functionary'].includes(f.name)) {
      // the format's tag names in capitals (no source shows it)
      const upper = (w: Written) =>
        whole(w).replace(
          /<(\/?)(tool_call|function|parameter|arg_key|arg_value)\b/g,
          (_m, sl: string, t: string) => `<${sl}${t.toUpperCase()}`,
        );
      slips.push(['upper-tags', upper, 'either']);
    }
    if (f.marked) {
      // a marked call as the whole output inside a fence: a call (yogthos/samizdat#19) or the
      // format shown (blazux/qwen3.8-Flash-DGX#29): either
      slips.push(['fenced-whole', (w) => `\`\`\`\n${whole(w)}\n\`\`\``, 'either', call, 'none']);
      // two formats in one message (unslothai/unsloth#5704 reads a Mistral call and another shape
      // in one message): this format's call, then a Hermes call
      if (f.name !== 'hermes') {
        const h = hermes.write(other, ARGS[other] as JsonObject, JSON.stringify(ARGS[other]));
        slips.push(['mixed-hermes', (w) => `${whole(w)}\n${whole(h)}`, 'call', [...call, otherCall], 'none']);
      }
    }
    const spell = (name: string, a: JsonObject) => f.write(name, a, spellArgs(a, 'json'));
    for (const [what, slip, truth, calls, neg = 'all'] of slips) {
      add(f, what, tool, slip(plain), truth, calls ?? call);
      if (neg === 'none') continue;
      add(f, `${what}-undeclared`, tool, slip(spell('delete_files', args)), 'content', []);
      if (neg === 'all') add(f, `${what}-misfit`, tool, slip(spell(tool, { nope: 'x' })), 'content', []);
      add(
        f,
        `${what}-fenced-sample`,
        tool,
        `A call looks like this:\n\n\`\`\`\n${slip(plain)}\n\`\`\`\n\nThe server reads it for you.`,
        'content',
        [],
      );
    }
    if (f.marked) {
      // a call split across reasoning and content (the reasoning parser ended the section inside
      // the call): either, and never a wrong call
      const w = whole(plain);
      const cut = Math.floor(w.length / 2);
      add(
        f,
        'split-reasoning',
        tool,
        w.slice(cut),
        'either',
        call,
        false,
        '',
        `Let me check.\n${w.slice(0, cut)}`,
      );
    }
  };

  /**
   * recall12: small models' slips no set wrote yet, per published format, each with the negatives
   * beside it (the slip for an undeclared tool; with arguments that fit no schema where the reading
   * is gated; in a fenced sample an explanation goes on past), and near misses that must stay text:
   * a tool name one slip from a declared one, a call quoted inside a sentence or a blockquote, a call
   * the token limit cut inside its name. A slip no source shows is `either`.
   */
  const addRecall12 = (f: Format, tool: string, plain: Written, call: PerturbCase['calls']) => {
    const args = ARGS[tool] as JsonObject;
    const objectBody = plain.body.includes('{"name": ');
    /** `sample`: only the fenced sample (an undeclared call after a think block leaves the block reasoning). */
    type Neg = 'all' | 'standard' | 'sample';
    /** Each slip writes the call for a name and arguments (so its negatives carry the same slip). */
    const slips: [string, (name: string, a: JsonObject) => string, Truth, Neg][] = [];
    const json = (name: string, a: JsonObject) => f.write(name, a, JSON.stringify(a));
    // an end-of-turn token written out after the call (a detokenizer that keeps special tokens:
    // Llama 3.1 ends a python_tag call with <|eom_id|>, ChatML turns end with <|im_end|>, GLM-4
    // hands over with <|observation|>, DeepSeek's <｜end▁of▁sentence｜>, Mistral's </s>)
    const eos = EOS[f.name];
    if (eos) slips.push(['end-token-written', (n, a) => `${whole(json(n, a))}${eos}`, 'call', 'standard']);
    // stray blank lines and indentation around the envelope
    slips.push(['stray-blanks', (n, a) => `\n\n   ${whole(json(n, a))}  \n\n`, 'call', 'standard']);
    // a reasoning section first (a thinking model asked to call at once)
    slips.push([
      'think-first',
      (n, a) => `<think>\nThe user wants this; I will call the tool.\n</think>\n\n${whole(json(n, a))}`,
      'call',
      'sample',
    ]);
    if (f.json) {
      // arguments pretty-printed over several lines (the prompt's examples were indented)
      slips.push([
        'pretty-arguments',
        (n, a) => whole(f.write(n, a, JSON.stringify(a, null, 2))),
        'call',
        'standard',
      ]);
    }
    if (f.json && objectBody) {
      // a trailing comma after the call object's last member (the arguments' own is recall7's)
      slips.push([
        'call-trailing-comma',
        (n, a) => {
          const t = whole(json(n, a));
          const i = t.indexOf('{"name": ');
          const e = scanJsonValue(t, i)?.end ?? -1;
          return `${t.slice(0, e - 1)},${t.slice(e - 1)}`;
        },
        'call',
        'standard',
      ]);
      // the whole call object printed as a Python dict (`{'name': …, 'arguments': {…: True}}`)
      slips.push([
        'python-dict-call',
        (n, a) => {
          const t = whole(json(n, a));
          const i = t.indexOf('{"name": ');
          const e = scanJsonValue(t, i)?.end ?? -1;
          return t.slice(0, i) + pyRepr(JSON.parse(t.slice(i, e))) + t.slice(e);
        },
        'call',
        'standard',
      ]);
    }
    if (f.name === 'kimi-k2') {
      // the call id without its index (`functions.NAME` then the argument marker); re-judged a
      // call by recall14: only the template writes these special tokens, the index is a counter
      slips.push([
        'kimi-no-index',
        (n, a) => whole(json(n, a)).replace(':0<|tool_call_argument_begin|>', '<|tool_call_argument_begin|>'),
        'call',
        'standard',
      ]);
    }
    if (f.name === 'gpt-oss') {
      // the header without `<|constrain|>json` (openai/harmony writes both forms)
      slips.push([
        'harmony-no-constrain',
        (n, a) => whole(json(n, a)).replace(' <|constrain|>json<|message|>', '<|message|>'),
        'call',
        'standard',
      ]);
    }
    if (f.name === 'granite') {
      // one call object without the list around it
      slips.push([
        'granite-no-list',
        (n, a) => {
          const w = json(n, a);
          return `${w.open}${w.body.slice(1, -1)}`;
        },
        'call',
        'standard',
      ]);
    }
    if (f.name === 'hermes') {
      // `"function"` for the name key (OpenAI's nesting flattened); re-judged a call by recall14:
      // inside <tool_call>, read only where the arguments fit the schema (its misfit stays text)
      slips.push([
        'function-key',
        (n, a) => whole(json(n, a)).replace('{"name": ', '{"function": '),
        'call',
        'all',
      ]);
    }
    if (f.name === 'fence') {
      // the fence without a language, or named after the format
      slips.push([
        'fence-no-lang',
        (n, a) => whole(json(n, a)).replace('```json\n', '```\n'),
        'call',
        'standard',
      ]);
      slips.push([
        'fence-tool-lang',
        // re-judged a call by recall14: the fence's label says what it holds
        (n, a) => whole(json(n, a)).replace('```json\n', '```tool_call\n'),
        'call',
        'standard',
      ]);
    }
    for (const [what, slip, truth, neg] of slips) {
      add(f, what, tool, slip(tool, args), truth, call);
      // an end-of-turn token is a special token: dropping it from text is no lost byte
      const kept = what === 'end-token-written' ? (t: string) => t.replace(eos as string, '') : undefined;
      if (neg !== 'sample') {
        const u = slip('delete_files', args);
        add(f, `${what}-undeclared`, tool, u, 'content', [], false, '', undefined, kept?.(u));
      }
      if (neg === 'all') add(f, `${what}-misfit`, tool, slip(tool, { nope: 'x' }), 'content', []);
      add(
        f,
        `${what}-fenced-sample`,
        tool,
        `A call looks like this:\n\n\`\`\`\n${slip(tool, args).trim()}\n\`\`\`\n\nThe server reads it for you.`,
        'content',
        [],
        false,
        '',
        undefined,
        kept?.(
          `A call looks like this:\n\n\`\`\`\n${slip(tool, args).trim()}\n\`\`\`\n\nThe server reads it for you.`,
        ),
      );
    }
    // a name one slip from a declared tool: never that tool (nothing invented)
    for (const [what, near] of nearNames(tool)) add(f, what, tool, whole(json(near, args)), 'content', []);
    // a call quoted inside a sentence, or in a blockquote the answer goes on past
    const w = whole(plain);
    add(f, 'quoted-in-sentence', tool, `The model writes "${w}" when it wants that.`, 'content', []);
    add(
      f,
      'blockquoted',
      tool,
      `You sent this:\n\n> ${w.replaceAll('\n', '\n> ')}\n\nI will not run it again.`,
      'content',
      [],
    );
    // the token limit cut inside the tool's name
    const at = w.indexOf(tool);
    if (at >= 0) add(f, 'cut-in-name', tool, w.slice(0, at + 3), 'content', [], true);
  };

  /**
   * recall14: slips no set wrote yet, on every published format (and four formats no set wrote),
   * each with the negatives beside it (the slip for an undeclared tool; with arguments that fit no
   * schema where the envelope is no longer the format's own; in a fenced sample an explanation
   * goes on past). A slip no source shows is `either`: only a wrong call is a defect there.
   */
  const addRecall14 = (f: Format, tool: string, plain: Written, call: PerturbCase['calls']) => {
    const args = ARGS[tool] as JsonObject;
    const other = tool === 'read_file' ? 'get_weather' : 'read_file';
    const otherCall = { name: other, arguments: ARGS[other] as JsonObject };
    const hermes = FORMATS[0] as Format;
    type Neg = 'all' | 'standard' | 'sample' | 'none';
    /** name, the slip, truth, negatives, the calls meant (default: the one call), the prose left. */
    const slips: [
      string,
      (name: string, a: JsonObject) => string,
      Truth,
      Neg,
      PerturbCase['calls']?,
      string?,
    ][] = [];
    const json = (name: string, a: JsonObject) => f.write(name, a, JSON.stringify(a));
    if (plain.close.trim() !== '') {
      // the output ends inside the closing tag (a stop string or a detokenizer ate its end)
      slips.push([
        'truncated-close',
        (n, a) => {
          const w = json(n, a);
          const c = w.close.trimEnd();
          return w.open + w.body + c.slice(0, c.length - Math.min(3, c.length - 1));
        },
        'call',
        'standard',
      ]);
    }
    if (f.json) {
      // the arguments a JSON string holding a Python dict (`"{'path': 'src/app.ts'}"`)
      slips.push([
        'string-python-dict',
        (n, a) => whole(f.write(n, a, JSON.stringify(pyRepr(a)))),
        'call',
        'standard',
      ]);
      // pretty-printed arguments with a trailing comma after the last member
      slips.push([
        'pretty-trailing-comma',
        (n, a) => whole(f.write(n, a, JSON.stringify(a, null, 2).replace(/\n\}$/, ',\n}'))),
        'call',
        'standard',
      ]);
    }
    if (f.json && plain.body.startsWith('[') && plain.body.endsWith(']')) {
      // a trailing comma after the list's last call object
      slips.push([
        'list-trailing-comma',
        (n, a) => {
          const w = json(n, a);
          return `${w.open}${w.body.replace(/\s*\]$/, (m) => `,${m}`)}${w.close}`;
        },
        'call',
        'standard',
      ]);
    }
    // the call as a markdown list item (the bullet stays content)
    slips.push([
      'list-item',
      (n, a) => `- ${whole(json(n, a))}`,
      f.marked ? 'call' : 'either',
      'standard',
      call,
      '-',
    ]);
    if (f.marked && f.name !== 'hermes') {
      // a Hermes call first, then this format's (unslothai/unsloth#5704 shows two shapes in one message)
      const h = hermes.write(other, ARGS[other] as JsonObject, JSON.stringify(ARGS[other]));
      slips.push([
        'hermes-then-format',
        (n, a) => `${whole(h)}\n${whole(json(n, a))}`,
        'call',
        'none',
        [otherCall, ...call],
      ]);
    }
    if (plain.open.includes('<') || plain.close.includes('<')) {
      // fullwidth look-alike angle brackets (no source shows it)
      slips.push([
        'lookalike-brackets',
        (n, a) => whole(json(n, a)).replaceAll('<', '＜').replaceAll('>', '＞'),
        'either',
        'all',
      ]);
    }
    if (f.json) {
      // typographic quotes for the JSON's (a renderer's smart quotes; no source shows it)
      slips.push([
        'smart-quotes',
        (n, a) => {
          let open = true;
          return whole(json(n, a)).replace(/"/g, () => ((open = !open) ? '\u201d' : '\u201c'));
        },
        'either',
        'all',
      ]);
    }
    // CRLF line ends throughout, a sentence before the call (Windows clients, some detokenizers)
    const crlf = (t: string) => t.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n');
    // a value written raw in the envelope (XML-ish formats) gets the CRLF too; one escaped in JSON not
    const raw = whole(json(tool, args));
    const crlfArgs = Object.fromEntries(
      Object.entries(args).map(([k, v]) => [k, typeof v === 'string' && raw.includes(v) ? crlf(v) : v]),
    );
    slips.push([
      'crlf',
      (n, a) => crlf(`Let me check that first.\n${whole(json(n, a))}\n`),
      'call',
      'standard',
      [{ name: tool, arguments: crlfArgs as JsonObject }],
      'Let me check that first.',
    ]);
    // a byte-order mark before the call
    // (no source shows it)
    slips.push(['bom-first', (n, a) => `\uFEFF${whole(json(n, a))}`, 'either', 'standard']);
    // a long reasoning section left open, then the call (a thinking model that never closed it)
    const thought = Array.from(
      { length: 12 },
      (_, i) =>
        `Step ${i + 1}: the user wants this done, so I look at what the tool needs and what I know already.`,
    ).join('\n');
    slips.push([
      'open-think-long',
      (n, a) => `<think>\n${thought}\n\n${whole(json(n, a))}`,
      // a marked call ends the reasoning (reasoning-calls.ts); a bare object there may be a draft
      f.marked ? 'call' : 'either',
      'standard',
    ]);
    for (const [what, slip, truth, neg, calls, prose] of slips) {
      const from = out.length;
      add(f, what, tool, slip(tool, args), truth, calls ?? call, false, prose ?? '');
      if (neg !== 'none' && neg !== 'sample')
        add(f, `${what}-undeclared`, tool, slip('delete_files', args), 'content', []);
      if (neg === 'all') add(f, `${what}-misfit`, tool, slip(tool, { nope: 'x' }), 'content', []);
      const sample = slip(tool, args).trim();
      if (neg !== 'none' && !sample.includes('```'))
        add(
          f,
          `${what}-fenced-sample`,
          tool,
          `A call looks like this:\n\n\`\`\`\n${sample}\n\`\`\`\n\nThe server reads it for you.`,
          'content',
          [],
        );
      // a reasoning section left open holds the text when no call is read: nothing is lost
      if (what === 'open-think-long') for (const c of out.slice(from)) c.toReasoning = true;
    }
  };

  for (const f of FORMATS14) {
    set = 'recall14';
    for (const tool of Object.keys(ARGS)) {
      const args = ARGS[tool] as JsonObject;
      const call = [{ name: tool, arguments: args }];
      const plain = f.write(tool, args, spellArgs(args, 'json'));
      add(f, 'clean', tool, whole(plain), 'call', call);
      add(
        f,
        'undeclared',
        tool,
        whole(f.write('delete_files', args, spellArgs(args, 'json'))),
        'content',
        [],
      );
      addRecall14(f, tool, plain, call);
    }
  }

  for (const f of FORMATS) {
    set = f.name === 'deepseek-v32' ? 'recall9' : 'recall8';
    for (const tool of Object.keys(ARGS)) {
      const args = ARGS[tool] as JsonObject;
      const call = [{ name: tool, arguments: args }];
      const w = (name = tool, style: ArgStyle = 'json') => f.write(name, args, spellArgs(args, style));
      const plain = w();
      add(f, 'clean', tool, whole(plain), 'call', call);

      if (plain.close !== '') add(f, 'missing-close', tool, plain.open + plain.body, 'call', call);
      if (f.misspell && plain.close !== '') {
        add(f, 'misspelled-close', tool, plain.open + plain.body + f.misspell(plain.close), 'call', call);
      }
      if (f.json) {
        const styles: ArgStyle[] = ['trailing-comma', 'single-quotes', 'string-arguments'];
        if (Object.values(args).some((v) => typeof v === 'boolean')) styles.push('python-literals');
        if (Object.values(args).some((v) => typeof v === 'number')) styles.push('quoted-number');
        if (Object.values(args).some((v) => typeof v === 'string' && v.includes('\n')))
          styles.push('raw-newline');
        for (const s of styles) add(f, s, tool, whole(w(tool, s)), 'call', call);
        // `"say "hi" twice"`: the string's end is a guess, unless the schema settles it
        if (Object.values(args).some((v) => typeof v === 'string' && v.includes('"'))) {
          add(f, 'raw-quotes', tool, whole(w(tool, 'raw-quotes')), 'either', call);
        }
      } else if (Object.values(args).some((v) => typeof v === 'number')) {
        add(f, 'quoted-number', tool, whole(f.write(tool, { ...args, limit: '5' }, '')), 'call', call);
      }
      addUnseen(f, tool, plain, w, call);
      set = 'recall9';
      addRecall9(f, tool, plain, call);
      set = 'recall10';
      addRecall10(f, tool, plain, call);
      set = 'recall11';
      addRecall11(f, tool, plain, call);
      set = 'recall12';
      addRecall12(f, tool, plain, call);
      set = 'recall14';
      addRecall14(f, tool, plain, call);
      set = f.name === 'deepseek-v32' ? 'recall9' : 'recall8';
      for (const [what, rename] of renamed) {
        if (f.name === 'kimi-k2' || f.name === 'gpt-oss') {
          if (what.startsWith('name-prefix')) continue;
        }
        add(f, what, tool, whole(w(rename(tool))), 'call', call);
      }
      // no declared tool: an undeclared name, or a renamed one whose arguments fit no schema
      add(
        f,
        'undeclared',
        tool,
        whole(f.write('delete_files', args, spellArgs(args, 'json'))),
        'content',
        [],
      );
      const misfit = { nope: 'x' };
      add(
        f,
        'renamed-misfit',
        tool,
        whole(f.write(`functions.${tool}`, misfit, spellArgs(misfit, 'json'))),
        'content',
        [],
      );
      add(
        f,
        'misspelled-undeclared',
        tool,
        f.misspell && plain.close !== ''
          ? (() => {
              const u = f.write('delete_files', args, spellArgs(args, 'json'));
              return u.open + u.body + (f.misspell as (c: string) => string)(u.close);
            })()
          : whole(f.write('Delete_Files', args, spellArgs(args, 'json'))),
        'content',
        [],
      );
      // two calls without a separator
      const other = tool === 'read_file' ? 'get_weather' : 'read_file';
      const second = f.write(other, ARGS[other] as JsonObject, JSON.stringify(ARGS[other]));
      const glued = f.glue ? f.glue(plain, second) : whole(plain) + whole(second);
      add(f, 'glued', tool, glued, f.marked ? 'call' : 'either', [
        ...call,
        { name: other, arguments: ARGS[other] as JsonObject },
      ]);
      // prose around
      add(
        f,
        'prose-before',
        tool,
        `Let me check that first.\n${whole(plain)}`,
        'call',
        call,
        false,
        'Let me check that first.',
      );
      add(
        f,
        'prose-around',
        tool,
        `Let me check that first.\n${whole(plain)}\nI will report back.`,
        f.marked ? 'call' : 'content',
        call,
        false,
        'Let me check that first. I will report back.',
      );
      // a call a sentence explains: a sample, not a call
      add(
        f,
        'explained-inline',
        tool,
        `To do that you would write ${whole(plain)} in your own agent.`,
        'content',
        [],
      );
      // the sample a colon introduces, at the end of the answer (mid-sentence.ts)
      add(f, 'explained-colon', tool, `You could do it like this: ${whole(plain)}`, 'content', []);
      // on lines of its own after an explaining sentence: the docs keep a marked envelope there a
      // call (no structural rule tells it from a call after a sentence), an unmarked one text
      add(
        f,
        'explained-example',
        tool,
        `For example, you could call it like this:\n\n${whole(plain)}\n\nThat is the whole syntax.`,
        f.marked ? 'either' : 'content',
        f.marked ? call : [],
        false,
        'For example, you could call it like this: That is the whole syntax.',
      );
      // cut by the token limit mid-arguments
      const full = whole(plain);
      const cutAt = plain.open.length + Math.floor(plain.body.length * 0.6);
      add(f, 'cut', tool, full.slice(0, cutAt), 'content', [], true);
    }
  }
  out.push(...recall15Cases());
  out.push(...recall16Cases());
  out.push(...recall17Cases());
  out.push(...recall18Cases());
  return out;
}

/** `leftover`: the calls read right, but the content holds more than the prose (a slip of the envelope). */
export type Verdict = 'correct' | 'leftover' | 'wrong' | 'miss' | 'content-ok' | 'lost-bytes';

export interface Classified {
  c: PerturbCase;
  verdict: Verdict;
  /** Streamed at some chunking differs from the whole read. */
  parity: string | null;
  got: string;
}

function read(c: PerturbCase): RecoveryResult {
  let n = 0;
  return recoverMessage(
    { content: c.text, reasoning: c.reasoning ?? null, cut: c.cut },
    { tools: c.tools ?? PERTURB_TOOLS, newId: () => `c${n++}` },
  );
}

function readStreamed(c: PerturbCase, pieces: string[]): RecoveryResult {
  let n = 0;
  const s = createRecoveryStream({ tools: c.tools ?? PERTURB_TOOLS, newId: () => `c${n++}` });
  const events = [];
  if (c.reasoning !== undefined) events.push(...s.push({ reasoning: c.reasoning }));
  for (const p of pieces) events.push(...s.push({ content: p }));
  events.push(...s.finish({ cut: c.cut }));
  return collectEvents(events, s);
}

const key = (r: RecoveryResult) =>
  JSON.stringify({ content: r.content, calls: r.calls.map((x) => [x.name, x.arguments, x.repairs]) });

/**
 * Chunkings a case is streamed at: one character at a time and seeded random cuts (one cut
 * sequence per case; its seed from the case's id, so the ~6,300 cases are cut ~6,300 ways, not
 * the same two); with `everyCut`, also fixed sizes, two random cuts from seed 1 and the text cut
 * in two at every position.
 */
function chunkings(text: string, seed: number, everyCut: boolean): string[][] {
  const sized = (k: number) => {
    const p: string[] = [];
    for (let i = 0; i < text.length; i += k) p.push(text.slice(i, i + k));
    return p;
  };
  let x = seed || 1;
  const rnd = () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x;
  };
  const random = () => {
    const p: string[] = [];
    let i = 0;
    while (i < text.length) {
      const k = 1 + (rnd() % 9);
      p.push(text.slice(i, i + k));
      i += k;
    }
    return p;
  };
  if (!everyCut) return [sized(1), random()];
  const all = [sized(1), sized(2), sized(3), sized(7), sized(16), random(), random()];
  for (let i = 1; i < text.length; i++) all.push([text.slice(0, i), text.slice(i)]);
  return all;
}

/** A case's own seed for its random cuts (FNV-1a of its id). */
function seedOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h & 0x7fffffff || 1;
}

/** The whole text went to reasoning (blanks aside): a leading `<think>` left open holds it. */
function inReasoning(c: PerturbCase, r: RecoveryResult): boolean {
  const blanks = (t: string) => t.replace(/\s+/g, ' ').trim();
  return (
    c.toReasoning === true && r.content === null && blanks(`<think>${r.reasoning ?? ''}`) === blanks(c.text)
  );
}

export function classify(c: PerturbCase, opts: { seed?: number; everyCut?: boolean } = {}): Classified {
  const r = read(c);
  const want = c.calls.map((w) => JSON.stringify([w.name, w.arguments]));
  const got = r.calls.map((x) => JSON.stringify([x.name, JSON.parse(x.arguments)]));
  let verdict: Verdict;
  if (got.length > 0) {
    const right = got.length === want.length && got.every((g, i) => g === want[i]);
    const blanks = (t: string) => t.replace(/\s+/g, ' ').trim();
    verdict =
      c.truth === 'content' || !right
        ? 'wrong'
        : blanks(r.content ?? '') === blanks(c.prose)
          ? 'correct'
          : 'leftover';
  } else if ((r.content ?? '') !== c.text && r.content !== c.kept && !inReasoning(c, r))
    verdict = 'lost-bytes';
  else verdict = c.truth === 'call' ? 'miss' : 'content-ok';
  let parity: string | null = null;
  const k = key(r);
  const everyCut = opts.everyCut === true;
  for (const pieces of chunkings(c.text, opts.seed ?? (everyCut ? 1 : seedOf(c.id)), everyCut)) {
    const s = readStreamed(c, pieces);
    if (key(s) !== k) {
      parity = JSON.stringify(pieces.slice(0, 3));
      break;
    }
  }
  return { c, verdict, parity, got: JSON.stringify({ calls: got, content: r.content }) };
}
