/**
 * Improvised calls: small models that no grammar steers (prompted tools, `auto` mode, a backend
 * without a parser) write a call in a shape no format defines. This family strips what is
 * around the call (an end-of-turn token the backend left, one code fence, an XML prolog, a
 * wrapper token pair such as `[TOOL_CALL] … [/TOOL_CALL]`) and hands the rest to the
 * schema-guided reader (kit/structured-reader.ts), which accepts the output only when it is a
 * sequence of structured values each with exactly one reading as a call of a declared tool
 * whose arguments fit the schema. Captures, each with its source: tests/fixtures/parsers/wild*.json.
 *
 * Strict gates keep precision: the call is the WHOLE output, the name is exactly a declared
 * tool (or, in a name-and-arguments object, a keyword call or a tag, that name in another case
 * or under `functions.`/`default_api.`, when exactly one declared tool is meant: repair
 * name-case / name-prefix), the arguments fit that tool's schema, several calls are all or nothing. A whole-output
 * check like `json`: no per-character cost; outputs starting with `{`, `[`, a fence, a declared
 * name, `<name>` or a few wrapper tags are held to the end (up to maxHeldBytes).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { skipWs, trimEndIndex } from '../kit/json-scan.js';
import { readXmlCalls } from '../kit/long-tail.js';
import { readImprovisedCalls } from '../kit/structured-reader.js';
import { MINIMAX_INVOKE } from './minimax-m2.js';

/** What may follow a declared name at the start of an output for it to be held as a possible call. */
const NAME_FOLLOWERS = ['(', ' (', '{', ' {', '\n{', ':', ' :'];

/**
 * Fence languages small models put on a call: ```json, ```tool_call (Gemma), ```tool_code, ```xml
 * (Qwen2), ```function_call (Gemma 3 under a prompt that names the block so,
 * gamemaker1/gemma3-function-calling-benchmarks).
 */
const FENCE_LANGS = new Set([
  '',
  'json',
  'javascript',
  'python',
  'tool_call',
  'tool_code',
  'xml',
  'function_call',
]);

/**
 * A call fence on one line whose body is code, not JSON (recall26): its label, then a blank and
 * the body, or the body glued to the label where it opens with Gemini's own namespace, which no
 * label word continues into: ```` ```tool_codeprint(default_api.Greetings())``` ```` (gemini-2.0-flash
 * in AutoGen, microsoft/autogen#6505, the fence's line breaks lost). The body is then read like any
 * other (a declared tool whose arguments fit).
 */
const CODE_ONE_LINE = /^(tool_code|python)(?:[ \t]+(?=[A-Za-z_])|(?=print\(default_api\.|default_api\.))/;

/**
 * The bodies of the code fences filling the text, one after the other, joined by line breaks
 * (each fence one value of the sequence the reader reads: several calls fenced one by one, as
 * Gemma 3 writes parallel calls); null when the text is not exactly such a run. Every fence has
 * the same language; only blanks between them; the last may be left open by the end of output.
 * A fence closes at the first ``` that starts a line (recall15: a ``` inside a string argument,
 * `content="…\n```sh\n…"`, is no close), failing that at the first ``` in it.
 */
function fenceBody(t: string): string | null {
  const bodies: string[] = [];
  let lang: string | null = null;
  let i = 0;
  // the next ``` at a line start, searched once forward (each search starts past the last)
  let lineClose = -2;
  const closeAfter = (from: number): number => {
    if (lineClose !== -1 && lineClose < from) {
      const at = t.indexOf('\n```', from - 1);
      lineClose = at < 0 ? -1 : at + 1;
    }
    return lineClose >= 0 ? lineClose : t.indexOf('```', from);
  };
  while (i < t.length) {
    if (!t.startsWith('```', i)) return null;
    const nl = t.indexOf('\n', i);
    const line = t.indexOf('```', i + 3);
    if (line >= 0 && (nl < 0 || line < nl)) {
      // the whole fence on one line, its body a JSON value after the label and a blank:
      // ```json {"name": …} ``` (nicoalbanese/ai-sdk-fundamentals#4, Deepseek-Coder-v2)
      const inner = t.slice(i + 3, line);
      const json = /^([A-Za-z_]*)[ \t]*(?=[{[])/.exec(inner);
      const one = json ?? CODE_ONE_LINE.exec(inner);
      const l = (one?.[1] ?? '').toLowerCase();
      if (
        !one ||
        (json !== null && one[1] !== '' && one[0] === one[1]) ||
        !FENCE_LANGS.has(l) ||
        (lang !== null && l !== lang)
      )
        return null;
      lang = l;
      bodies.push(t.slice(i + 3 + one[0].length, line));
      i = skipWs(t, line + 3);
      continue;
    }
    if (nl < 0) return null;
    const l = t
      .slice(i + 3, nl)
      .trim()
      .toLowerCase();
    if (!FENCE_LANGS.has(l) || (lang !== null && l !== lang)) return null;
    lang = l;
    const close = closeAfter(nl + 1);
    if (close < 0) {
      // the last fence left open by the end of output (as `json` reads one): a small model that
      // stopped after its fenced <tool_call> (a fence the engine otherwise reads as a sample)
      bodies.push(t.slice(nl + 1));
      break;
    }
    bodies.push(t.slice(nl + 1, close));
    i = skipWs(t, close + 3);
  }
  return bodies.length > 0 ? bodies.join('\n') : null;
}

/**
 * Wrapper token pairs around improvised calls (not structured values themselves): MiniMax's
 * `[TOOL_CALL] … [/TOOL_CALL]`, the Glaive fine-tunes' `<functioncall> …` (no closer) or
 * `<functioncall {…}>`, Llama 3.3's `<|python_tag|>name(…)`, LM Studio's `… [END_TOOL_REQUEST]`.
 * recall16 (tests/fixtures/recall/wild13.json): LM Studio's whole default block,
 * `[TOOL_REQUEST]\n{"name": …, "arguments": …}\n[END_TOOL_REQUEST]` (a DeepSeek-R1 distill after
 * its `</think>`, lmstudio-ai/lmstudio-bug-tracker#456), and the plural `<|tool_calls|>[…]<|/tool_calls|>`
 * a Phi-4-mini template asks for (vllm-project/vllm#14682). The first pair that fits is taken, so
 * `[TOOL_REQUEST]` comes before the bare `… [END_TOOL_REQUEST]`.
 */
const WRAPPERS: readonly [string, string][] = [
  ['[TOOL_CALL]', '[/TOOL_CALL]'],
  ['[TOOL_REQUEST]', '[END_TOOL_REQUEST]'],
  ['<|tool_calls|>', '<|/tool_calls|>'],
  ['<functioncall>', ''],
  // the object written inside the tag itself (maxi1134/Home-Assistant-Config#66)
  ['<functioncall ', '>'],
  ['<|python_tag|>', ''],
  ['', '[END_TOOL_REQUEST]'],
];
/**
 * End-of-turn tokens a backend left in the text after the call (its template and the model
 * disagree on the stop token): ChatML, Llama 3, GPT-2 style, Phi, Mistral.
 */
const EOS_TOKENS = ['<|im_end|>', '<|eot_id|>', '<|eom_id|>', '<|endoftext|>', '<|end|>', '</s>'];

function unwrap(text: string): string {
  // by index, one slice at the end (a run of repeated tokens is hostile output's favourite)
  let end = text.length;
  for (;;) {
    const eos = EOS_TOKENS.find((e) => end >= e.length && text.startsWith(e, end - e.length));
    if (eos === undefined) break;
    end = trimEndIndex(text, end - eos.length);
  }
  let from = 0;
  // an XML prolog before the call (`<?xml …?><json>{…}</json>`, mlx-omni-server#4)
  if (text.startsWith('<?xml')) {
    const e = text.indexOf('?>');
    if (e < 0 || e + 2 > end) return text;
    from = skipWs(text, e + 2);
  }
  const t = from === 0 && end === text.length ? text : text.slice(from, end);
  for (const [open, close] of WRAPPERS) {
    if (t.startsWith(open) && t.endsWith(close) && t.length >= open.length + close.length)
      return t.slice(open.length, t.length - close.length).trim();
  }
  return t;
}

/** MiniMax-M2's block closer (its opener `<minimax:tool_call>` is read by minimax-m2). */
const MINIMAX_END = '</minimax:tool_call>';
/** Nemotron's closer (its opener `<TOOLCALL>` is read by nemotron). */
const NEMOTRON_END = '</TOOLCALL>';

/**
 * Near miss (issue 30, repair `missing-envelope-open`): MiniMax's bare invokes whose
 * `<minimax:tool_call>` opener the model dropped, the closer kept at the very end
 * (anomalyco/opencode#26296, MiniMax M2.5). The closer is MiniMax's own token, and it belongs to
 * the invokes as an orphan `</tool_call>` belongs to a bare Qwen3-Coder function; the invokes
 * are read as without it (every one a declared tool with arguments that fit). Null when the
 * output is not `<invoke ` … `</minimax:tool_call>` or `[` … `</TOOLCALL>`.
 */
function orphanMinimaxEnd(bare: string): string | null {
  if (bare.startsWith('<invoke ') && bare.endsWith(MINIMAX_END))
    return bare.slice(0, bare.length - MINIMAX_END.length).trimEnd();
  // the same with Nemotron's list and its closer (ai-dynamo/dynamo#10115: `[{"name": …}]</TOOLCALL>`,
  // the `<TOOLCALL>` opener dropped)
  if (bare.startsWith('[') && bare.endsWith(NEMOTRON_END))
    return bare.slice(0, bare.length - NEMOTRON_END.length).trimEnd();
  return null;
}

/**
 * Near miss (recall24, repair `bracketless-tags`): MiniMax-M2's invoke with every tag's `<` and
 * `</` left out, as MLX builds of MiniMax-M2.1 to M2.7 write it (exo-explore/exo#1882,
 * ml-explore/mlx-lm#1145):
 *   invoke name="get_weather">
 *   parameter name="location">Parisparameter>
 *   invoke>
 * The closer lost exactly what the openers lost, so a value is the text before its
 * `parameter>` (a value ending in `parameter` itself keeps it: `setparameterparameter>`). Read
 * only when the whole output is such invokes: each names a declared tool; a value runs to the
 * FIRST `parameter>` after it, which a line break and the next `parameter name="` or `invoke>`
 * must follow (a value holding `parameter>` is text); a key once per invoke; no `<` in a value,
 * nor the text of another tag (`parameter name="`, `invoke name="`, `invoke>`: a closer was lost)
 * (where the model dropped `<` from tags, one in a value may be gone too); and the arguments fit
 * the schema (SCHEMA_GATED). Returns the invokes with their brackets, for MiniMax's own reader.
 */
const BL_INVOKE = 'invoke name="';
const BL_PARAM = 'parameter name="';
const BL_PARAM_END = 'parameter>';
const BL_INVOKE_END = 'invoke>';
function bracketlessInvokes(bare: string, ctx: ParseContext): string | null {
  if (!bare.startsWith(BL_INVOKE)) return null;
  const out: string[] = [];
  let i = 0;
  const head = (from: number): { name: string; end: number } | null => {
    const q = bare.indexOf('"', from);
    if (q < 0 || bare.charCodeAt(q + 1) !== 0x3e) return null;
    const name = bare.slice(from, q);
    return name === '' || /[\s<>"=]/.test(name) ? null : { name, end: q + 2 };
  };
  while (i < bare.length) {
    if (!bare.startsWith(BL_INVOKE, i)) return null;
    const h = head(i + BL_INVOKE.length);
    if (!h) return null;
    const tool = ctx.tools.get(h.name);
    if (!tool) return null;
    out.push(`<invoke name="${h.name}">`);
    i = skipWs(bare, h.end);
    const keys = new Set<string>();
    while (bare.startsWith(BL_PARAM, i)) {
      const k = head(i + BL_PARAM.length);
      if (!k || keys.has(k.name)) return null;
      keys.add(k.name);
      const close = bare.indexOf(BL_PARAM_END, k.end);
      if (close < 0) return null;
      const after = skipWs(bare, close + BL_PARAM_END.length);
      const gap = bare.slice(close + BL_PARAM_END.length, after);
      if (!gap.includes('\n') || !(bare.startsWith(BL_PARAM, after) || bare.startsWith(BL_INVOKE_END, after)))
        return null;
      const value = bare.slice(k.end, close);
      // a value holding a tag of its own shape is a closer lost, not text: where it ends is a guess
      if (
        value.includes('<') ||
        value.includes(BL_PARAM) ||
        value.includes(BL_INVOKE) ||
        value.includes(BL_INVOKE_END)
      )
        return null;
      out.push(`<parameter name="${k.name}">${value}</parameter>`);
      i = after;
    }
    if (!bare.startsWith(BL_INVOKE_END, i)) return null;
    out.push('</invoke>');
    i = skipWs(bare, i + BL_INVOKE_END.length);
  }
  return out.join('\n');
}

/** DeepSeek's DSML special token (`｜` is U+FF5C), as it prefixes the tags of its own blocks. */
const DSML = '｜DSML｜';

/**
 * Near miss (recall23, repair `dsml-tool-tag`): DeepSeek wrote a call as one element named after
 * the tool, its arguments child elements, with the DSML token on both tags where its own block's
 * `invoke`/`parameter` tags carry it (`<｜DSML｜aio-webcontent>\n <url>…</url>\n</｜DSML｜aio-webcontent>`,
 * apmantza/pi-free#376). The whole output must be that one element: opener and closer name the
 * same declared tool, the opener has no attributes; it is read as the element without the token
 * (`<NAME>…</NAME>`, which this family reads), and taken only when the arguments fit the tool's
 * schema (SCHEMA_GATED). Null when the output is not exactly such an element.
 */
function dsmlToolTag(bare: string, ctx: ParseContext): string | null {
  if (!bare.startsWith(`<${DSML}`)) return null;
  const gt = bare.indexOf('>');
  if (gt < 0) return null;
  const name = bare.slice(1 + DSML.length, gt);
  if (!ctx.tools.has(name)) return null;
  const close = `</${DSML}${name}>`;
  if (!bare.endsWith(close) || bare.length < gt + 1 + close.length) return null;
  return `<${name}>${bare.slice(gt + 1, bare.length - close.length)}</${name}>`;
}

function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  if (ctx.tools.size === 0) return null;
  const unwrapped = unwrap(text.trim());
  const dsml = dsmlToolTag(unwrapped, ctx);
  const orphan = dsml === null ? orphanMinimaxEnd(unwrapped) : null;
  const bracketless = dsml === null && orphan === null ? bracketlessInvokes(unwrapped, ctx) : null;
  if (bracketless !== null) {
    // MiniMax's own reader: a declared string stays byte for byte
    const read = readXmlCalls(bracketless, MINIMAX_INVOKE, ctx);
    if ('error' in read) return null;
    return {
      end: text.length,
      calls: read.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'bracketless-tags'] })),
    };
  }
  const bare = dsml ?? orphan ?? unwrapped;
  const fenced = bare.startsWith('```') ? fenceBody(bare) : null;
  if (bare.startsWith('```') && fenced === null) return null;
  // a closing fence with no opening one, the only ``` in the output, after the call (seed 001:
  // a 4B model's JSON "followed by stray backticks"): dropped as a fence around the call is
  const stray = fenced === null && bare.indexOf('```') === bare.length - 3 && bare.length > 3;
  const body = fenced !== null ? unwrap(fenced.trim()) : stray ? bare.slice(0, -3).trimEnd() : bare;
  const calls = readImprovisedCalls(body, ctx.tools);
  if (!calls) return null;
  const repairs =
    fenced !== null || stray
      ? ['code-fence']
      : orphan !== null
        ? ['missing-envelope-open']
        : dsml !== null
          ? ['dsml-tool-tag']
          : [];
  // a last fence the end of output left open: with finish reason `length`, a call cut off
  const open = fenced !== null && !bare.endsWith('```');
  return {
    end: text.length,
    calls: calls.map((c): ParsedCall => ({ name: c.name, arguments: c.args, repairs })),
    ...(open ? { truncated: true } : {}),
  };
}

export const improvised = defineFamily({
  name: 'improvised',
  markers: [],
  // after the strict formats (json is 90): a standard shape is always read by its own family
  priority: 95,
  lastResort: true,
  wholeStartsTag: true,
  backend: {},
  wholeStarts: [
    '{',
    '[',
    '```',
    '[TOOL_CALL]',
    '[TOOL_REQUEST]',
    '<functioncall>',
    '<functioncall ',
    '<function_calls>',
    '<function_call>',
    '<invoke ',
    // MiniMax-M2's invoke without its brackets (bracketlessInvokes)
    'invoke name="',
    'print(default_api.',
    'print(functions.',
    'default_api.',
    'functions.',
    '<response>',
    '<tools>',
    '<tool>',
    '<tool_calls>',
    '<|tool_calls|>',
    '<json>',
    '<?xml',
  ],
  // a declared name right before `(`, `{` or `:` (prose that merely starts with the name is
  // not held), `<name>`, `<name ` (attributes), `[name]`, or `<|python_tag|>name`
  wholeNameStarts: [
    { before: '', after: NAME_FOLLOWERS },
    // the name in another case before `(`: READ_FILE(path=…) (the reader takes it with keyword
    // arguments only); not before `{` or `:`, which prose opens with (`Search: …`)
    { before: '', after: ['('], foldCase: true },
    { before: '<', after: ['>', ' '] },
    { before: '[', after: [']'] },
    { before: '<|python_tag|>', after: [''] },
    // DeepSeek's DSML token on a tag named after the tool (dsmlToolTag)
    { before: `<${DSML}`, after: ['>'] },
  ],
  matchWhole,
});
