/**
 * wild20's findings (tests/fixtures/recall/wild20.json), whole and one character at a time
 * (readBoth), random chunkings equal whole:
 * - an envelope the output ended inside (`unclosed-envelope`) is a call only when its arguments
 *   fit the tool's schema (`parsers/engine/engine.ts` judgeEnvelope): `<tool_call>\n<function=Read>\n
 *   </function>` and the end, Read requiring file_path, was read as Read({}) (jundot/omlx#3442);
 *   now it stays text, `unrecovered` (re-asked where a retry is left), as a missing brace there is;
 * - Qwen3-Coder arguments written as attributes, `<function=websearch>\nquery="…" numResults=5`
 *   (Qwen3.8-27B, jundot/omlx#3153; `parsers/formats/qwen3-coder.ts` attributeArguments, repair
 *   `attribute-arguments`, schema-gated): read only where each value's end is certain;
 * - DeepSeek's DSML token on an element named after the tool, `<｜DSML｜aio-webcontent>` with the
 *   arguments as child elements (apmantza/pi-free#376; `parsers/formats/improvised.ts`
 *   dsmlToolTag, repair `dsml-tool-tag`, schema-gated): read as the same element without the token.
 */
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import { assertRandomSplits, options, readBoth, toolsOf } from './engine-helpers.js';

const obj = (properties: Record<string, unknown>, required: string[], closed = false) => ({
  type: 'object',
  properties,
  required,
  ...(closed ? { additionalProperties: false } : {}),
});
const S = { type: 'string' };
const N = { type: 'number' };
const B = { type: 'boolean' };
const names = (r: ReturnType<typeof readBoth>) => r.calls.map((c) => [c[0], c[1]]);
const text = (t: string) => ({ calls: [], content: t });

describe('an envelope the output ended inside before any argument is a call only when {} fits (jundot/omlx#3442)', () => {
  const READ = (required: string[]): DeclaredTool => ({
    name: 'Read',
    parameters: obj({ file_path: S, offset: N, limit: N }, required),
  });
  const OMLX = '<tool_call>\n<function=Read>\n</function>';

  it('keeps as text, byte for byte, the envelope oMLX withheld when Read requires file_path', () => {
    expect(readBoth(OMLX, toolsOf(READ(['file_path'])))).toEqual(text(OMLX));
  });

  it('keeps as text any envelope the output ended inside before an argument the tool requires', () => {
    const tools = toolsOf(READ(['file_path']));
    for (const t of [
      '<tool_call>\n{"name": "Read", "arguments": {}}',
      '<tool_call>\n<function=Read>\n',
      '<tool_call>\n<function=Read></function>\n</tool',
      'Let me read it.\n\n<tool_call>\n<function=Read>\n</function>',
    ])
      expect(readBoth(t, tools), t).toEqual(text(t));
  });

  it('reads, as before, one the output ended inside after some arguments (as the peer suites do)', () => {
    const tools = toolsOf(READ(['file_path']));
    const t = '<tool_call>\n<function=Read>\n<parameter=offset>\n5\n</parameter>\n</function>';
    expect(names(readBoth(t, tools))).toEqual([['Read', { offset: 5 }]]);
  });

  it('reads an unclosed envelope whose arguments fit, as before', () => {
    expect(names(readBoth(OMLX, toolsOf(READ([]))))).toEqual([['Read', {}]]);
    const tools = toolsOf(READ(['file_path']));
    for (const t of [
      '<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>',
      '<tool_call>\n{"name": "Read", "arguments": {"file_path": "a.py"}}',
    ])
      expect(readBoth(t, tools).calls, t).toEqual([['Read', { file_path: 'a.py' }, ['unclosed-envelope']]]);
  });
});

describe('Qwen3-Coder arguments written as attributes (Qwen3.8-27B, jundot/omlx#3153)', () => {
  const WEBSEARCH: DeclaredTool = {
    name: 'websearch',
    parameters: obj({ query: S, numResults: N, live: B }, ['query']),
  };
  const tools = toolsOf(WEBSEARCH);
  const QUERY =
    'Flowable Work platform-api analytics process-instance query endpoint frequency duration chart data REST';
  const LEAD = 'I have comprehensive material. Let me do one final targeted check...';
  const OMLX = `${LEAD}\n\n<tool_call>\n<function=websearch>\nquery="${QUERY}" numResults=5`;
  const fn = (body: string) => `<tool_call>\n<function=websearch>\n${body}\n</function>\n</tool_call>`;

  it('reads the output oMLX returned as content: the sentence stays content', () => {
    const r = readBoth(OMLX, tools);
    expect(r.calls).toEqual([
      ['websearch', { query: QUERY, numResults: 5 }, ['attribute-arguments', 'unclosed-envelope']],
    ]);
    expect(r.content).toBe(LEAD);
  });

  it('reads the same body closed, one pair, a boolean, pairs on separate lines', () => {
    expect(names(readBoth(fn(`query="${QUERY}" numResults=5`), tools))).toEqual([
      ['websearch', { query: QUERY, numResults: 5 }],
    ]);
    expect(names(readBoth(fn('query="x"'), tools))).toEqual([['websearch', { query: 'x' }]]);
    expect(names(readBoth(fn('query="x" live=true numResults=2.5'), tools))).toEqual([
      ['websearch', { query: 'x', live: true, numResults: 2.5 }],
    ]);
    expect(names(readBoth(fn('query="x"\nnumResults=3'), tools))).toEqual([
      ['websearch', { query: 'x', numResults: 3 }],
    ]);
  });

  it('keeps as text, byte for byte, a body whose reading is a guess or does not fit', () => {
    for (const body of [
      // a bare word for a string: where it ends is a guess
      'query=Flowable numResults=5',
      // a quote, a backslash or an angle bracket inside the quoted value
      'query="a "b" c"',
      'query="a \\"b\\" c"',
      'query="a <b> c"',
      // a key the tool lacks, a key twice, no required key, a value of the wrong type
      'query="x" count=5',
      'query="x" query="y"',
      'numResults=5',
      'query="x" numResults=five',
      'query="x" numResults="many"',
      // prose after the pairs, or pairs after prose
      'query="x" and then more',
      'Searching: query="x"',
      // single quotes
      "query='x'",
    ]) {
      expect(readBoth(fn(body), tools), body).toEqual(text(fn(body)));
      const open = `<tool_call>\n<function=websearch>\n${body}`;
      expect(readBoth(open, tools), open).toEqual(text(open));
    }
    const other = fn('query="x"').replaceAll('websearch', 'webfetch');
    expect(readBoth(other, tools)).toEqual(text(other));
  });

  it('streams in any chunking as it reads whole', () => {
    const texts = [OMLX, fn('query="x" numResults=5'), fn('query=x'), `${OMLX} more`];
    assertRandomSplits(texts.length, (k) => ({ text: texts[k]!, opts: () => options(tools) }), 23_001);
  });
});

describe("DSML's token on an element named after the tool (apmantza/pi-free#376)", () => {
  const AIO: DeclaredTool = {
    name: 'aio-webcontent',
    parameters: obj({ url: S, budgetTokens: N, query: S, diff: B }, ['url']),
  };
  const tools = toolsOf(AIO);
  const URL = 'https://github.com/runningZ1/union-search-skill';
  const QUERY = '支持的平台 supported platforms list general search engines google bing startpage mojeek';
  const el = (inner: string, open = 'aio-webcontent', close = open) =>
    `<｜DSML｜${open}>\n${inner}\n</｜DSML｜${close}>`;
  const CHILDREN = ` <url>${URL}</url>\n <budgetTokens>3000</budgetTokens>\n <query>${QUERY}</query>\n <diff>false</diff>`;
  const PI_FREE = el(CHILDREN);

  it('reads the output the Cline model wrote as text', () => {
    expect(readBoth(PI_FREE, tools)).toEqual({
      calls: [
        ['aio-webcontent', { url: URL, budgetTokens: 3000, query: QUERY, diff: false }, ['dsml-tool-tag']],
      ],
      content: null,
    });
  });

  it('keeps as text, byte for byte, an element that is not exactly that or whose arguments do not fit', () => {
    const closed = toolsOf({ name: 'aio-webcontent', parameters: obj({ url: S, query: S }, ['url'], true) });
    const bool = toolsOf({
      name: 'aio-webcontent',
      parameters: obj({ url: S, budgetTokens: B, query: S, diff: B }, ['url']),
    });
    const cases: [string, Map<string, DeclaredTool>][] = [
      [PI_FREE, toolsOf({ name: 'webfetch', parameters: obj({ url: S }, ['url']) })],
      [PI_FREE, closed],
      [PI_FREE, bool],
      [el(' <query>x</query>'), tools],
      [el(CHILDREN, 'aio-webcontent', 'webfetch'), tools],
      [el(CHILDREN, 'aio-webcontent mode="x"', 'aio-webcontent'), tools],
      [`${PI_FREE}\nDone.`, tools],
      [el(CHILDREN).replace('</｜DSML｜aio-webcontent>', '</aio-webcontent>'), tools],
      [el(CHILDREN).replace('<｜DSML｜aio-webcontent>', '<aio-webcontent>'), tools],
      [PI_FREE.slice(0, -5), tools],
    ];
    for (const [t, ts] of cases) expect(readBoth(t, ts), t).toEqual(text(t));
  });

  it('streams in any chunking as it reads whole', () => {
    const texts = [PI_FREE, `${PI_FREE} x`, el(' <query>x</query>')];
    assertRandomSplits(texts.length, (k) => ({ text: texts[k]!, opts: () => options(tools) }), 23_002);
  });
});
