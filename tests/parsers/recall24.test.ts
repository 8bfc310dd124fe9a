/**
 * The two misses recall23 left as text (wild19), whole and one character at a time (readBoth),
 * random chunkings equal whole:
 * - a call after a reasoning block as Open WebUI and Z.ai's web chat render it into content,
 *   `<details type="reasoning" …>…</details>`, or after that block's lone close first in the output
 *   (GLM via Z.ai's web API, izaart95-jpg/GLM-Free-API#38; `parsers/engine/lead-in.ts`): the block
 *   is the model's own reasoning, skipped as a ```thinking fence is; its text stays content;
 * - MiniMax-M2's invoke with every tag's `<` and `</` left out (exo-explore/exo#1882,
 *   ml-explore/mlx-lm#1145; `parsers/formats/improvised.ts` bracketlessInvokes, repair
 *   `bracketless-tags`, schema-gated): read only where each value's end is certain;
 * - and wild21's one miss: a Qwen3-Coder block whose `<function=NAME>` is written `<NAME>`
 *   (Qwen3.6 under OpenCode, anomalyco/opencode#30061; `parsers/formats/qwen3-coder.ts`
 *   elementForFunction, repair `element-for-function`), read where the rest is Qwen3-Coder's.
 */
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import { assertRandomSplits, options, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const S = { type: 'string' };
const BASH: DeclaredTool = {
  name: 'bash',
  parameters: { type: 'object', properties: { i: S, command: S }, required: ['command'] },
};
const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { location: S, days: { type: 'integer' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['location'],
  },
};
const tools = toolsOf(BASH, WEATHER, WRITE_FILE);
const names = (r: ReturnType<typeof readBoth>) => r.calls.map((c) => [c[0], c[1]]);
const text = (t: string) => ({ calls: [], content: t });

/** izaart95-jpg/GLM-Free-API#38 (wild19): the quote starts at the block's close. */
const GLM_CALL =
  'bash(i="Inspecting the upstream commit", command="git -C ../repo show --stat --oneline origin/main")';
const GLM_ARGS = {
  i: 'Inspecting the upstream commit',
  command: 'git -C ../repo show --stat --oneline origin/main',
};
const BLOCK =
  '<details type="reasoning" done="true" duration="3">\n<summary>Thought for 3 seconds</summary>\n> The user wants the upstream commit.\n> I will run git show.\n</details>';

describe('a call after a reasoning details block (GLM via Z.ai, izaart95-jpg/GLM-Free-API#38)', () => {
  it('reads the call after the lone close, which stays content', () => {
    const r = readBoth(`</details>\n${GLM_CALL}`, tools);
    expect(names(r)).toEqual([['bash', GLM_ARGS]]);
    expect(r.content).toBe('</details>');
  });

  it('reads the call after the whole block, in the shapes a whole output is read in', () => {
    for (const call of [
      GLM_CALL,
      `{"name": "bash", "arguments": ${JSON.stringify(GLM_ARGS)}}`,
      `\`\`\`json\n{"name": "bash", "arguments": ${JSON.stringify(GLM_ARGS)}}\n\`\`\``,
      `I will look at the commit.\n${GLM_CALL}`,
    ]) {
      const r = readBoth(`${BLOCK}\n${call}`, tools);
      expect(names(r), call).toEqual([['bash', GLM_ARGS]]);
      expect(r.content, call).toBe(
        call.startsWith('I will') ? `${BLOCK}\nI will look at the commit.` : BLOCK,
      );
    }
    // Z.ai's block before it is done, attributes in another order
    const zai = '<details type="reasoning" done="false">\n> thinking\n</details>\n\n';
    expect(names(readBoth(`${zai}${GLM_CALL}`, tools))).toEqual([['bash', GLM_ARGS]]);
  });

  it('keeps as text, byte for byte, every near miss', () => {
    for (const t of [
      // not a reasoning block: no type, another type, an attribute unquoted, prose in the opener
      `<details>\n> x\n</details>\n${GLM_CALL}`,
      `<details type="summary">\n> x\n</details>\n${GLM_CALL}`,
      `<details type="reasoning" open>\n> x\n</details>\n${GLM_CALL}`,
      `<details type="reasoning" done=true>\n> x\n</details>\n${GLM_CALL}`,
      // the close not alone on its line
      `<details type="reasoning">\n> x </details>\n${GLM_CALL}`,
      `<details type="reasoning">\n> x\n</details> y\n${GLM_CALL}`,
      `</details> y\n${GLM_CALL}`,
      // the lone close not first, or with prose before it
      `Done.\n</details>\n${GLM_CALL}`,
      // never closed
      `<details type="reasoning">\n> x\n${GLM_CALL}`,
      // after the block: an explanation, an example, prose after the call, two alternatives
      `${BLOCK}\nFor example:\n${GLM_CALL}`,
      `${BLOCK}\nYou could run:\n${GLM_CALL}`,
      `</details>\n${GLM_CALL}\nThat shows the commit.`,
      `</details>\n${GLM_CALL}\nor\n${GLM_CALL}`,
      // an undeclared tool, a key the tool lacks, a missing required key
      '</details>\nshell(command="ls")',
      '</details>\nbash(command="ls", cwd="/")',
      '</details>\nbash(i="x")',
      // a block longer than the cap (16,384 code units)
      `<details type="reasoning">\n${'> x\n'.repeat(4200)}</details>\n${GLM_CALL}`,
    ])
      expect(readBoth(t, tools), t.slice(0, 80)).toEqual(text(t));
  });

  it('keeps the block alone, or before prose, as text', () => {
    for (const t of [BLOCK, `${BLOCK}\nThe commit is 5eaf3f9.`, '</details>', '</details>\n'])
      expect(readBoth(t, tools)).toEqual(text(t));
  });
});

/** exo-explore/exo#1882 (wild19): the 'Actual Model Output'. */
const EXO = 'invoke name="get_weather">\nparameter name="location">Parisparameter>\ninvoke>';

describe("MiniMax-M2's invoke without its brackets (exo-explore/exo#1882)", () => {
  it('reads the output the issue gives', () => {
    const r = readBoth(EXO, tools);
    expect(r.calls).toEqual([['get_weather', { location: 'Paris' }, ['bracketless-tags']]]);
    expect(r.content).toBeNull();
  });

  it('reads several parameters and invokes, typed values, a value over lines, one ending in "parameter"', () => {
    const t =
      'invoke name="get_weather">\nparameter name="location">setparameterparameter>\nparameter name="days">3parameter>\ninvoke>\n' +
      'invoke name="write_file">\nparameter name="path">a.py parameter>\nparameter name="content">x = 1\nprint(x)\nparameter>\ninvoke>\n';
    expect(names(readBoth(t, tools))).toEqual([
      ['get_weather', { location: 'setparameter', days: 3 }],
      ['write_file', { path: 'a.py ', content: 'x = 1\nprint(x)\n' }],
    ]);
  });

  it('keeps as text, byte for byte, every near miss', () => {
    for (const t of [
      // prose before or after, or between invokes
      `${EXO}\nDone.`,
      `${EXO}\nWeather fetched.\n${EXO}`,
      // a value holding parameter> (where it ends is a guess), a closer not ending its line
      'invoke name="get_weather">\nparameter name="location">Parisparameter>parameter>\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">Parisparameter> x\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">Parisparameter>invoke>',
      // a value holding the text of another tag: the first value's closer was lost
      'invoke name="get_weather">\nparameter name="location">x\ninvoke>\ninvoke name="get_weather">\nparameter name="location">yparameter>\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">x\nparameter name="days">3parameter>\ninvoke>',
      // a value holding '<' (a dropped '<' in it cannot be told)
      'invoke name="get_weather">\nparameter name="location">a<bparameter>\ninvoke>',
      // no invoke> closer, no value closer, a key twice, the name unquoted
      'invoke name="get_weather">\nparameter name="location">Parisparameter>',
      'invoke name="get_weather">\nparameter name="location">Paris\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">Parisparameter>\nparameter name="location">Romeparameter>\ninvoke>',
      'invoke name=get_weather>\nparameter name="location">Parisparameter>\ninvoke>',
      // an undeclared tool, a key the tool lacks, a wrong type, a value off the enum, no required key
      'invoke name="get_forecast">\nparameter name="location">Parisparameter>\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">Parisparameter>\nparameter name="city">Parisparameter>\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">Parisparameter>\nparameter name="days">threeparameter>\ninvoke>',
      'invoke name="get_weather">\nparameter name="location">Parisparameter>\nparameter name="unit">kparameter>\ninvoke>',
      'invoke name="get_weather">\nparameter name="days">3parameter>\ninvoke>',
      // prose that starts with the words
      'invoke name="get_weather"> is how the tool is named.',
    ])
      expect(readBoth(t, tools), t).toEqual(text(t));
  });
});

/** anomalyco/opencode#30061 (wild21): Qwen3.6's block with `<read>` where `<function=read>` belongs. */
const OPENCODE =
  '<tool_call>\n<read>\n<parameter=filePath>\n/home/abc/some/file.java\n</parameter>\n</function>\n</tool_call>';
const READ: DeclaredTool = {
  name: 'read',
  parameters: {
    type: 'object',
    properties: { filePath: S, offset: { type: 'number' }, limit: { type: 'number' } },
    required: ['filePath'],
  },
};
const readTools = toolsOf(READ, BASH);

describe('a Qwen3-Coder block opened by an element named after the tool (anomalyco/opencode#30061)', () => {
  it('reads the block the thread quotes', () => {
    const r = readBoth(OPENCODE, readTools);
    expect(r.calls).toEqual([['read', { filePath: '/home/abc/some/file.java' }, ['element-for-function']]]);
    expect(r.content).toBeNull();
  });

  it('reads it with several parameters, after a sentence, and beside a well-formed function', () => {
    const two =
      '<tool_call>\n<read>\n<parameter=filePath>\na.java\n</parameter>\n<parameter=offset>\n10\n</parameter>\n</function>\n' +
      '<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>';
    expect(names(readBoth(two, readTools))).toEqual([
      ['read', { filePath: 'a.java', offset: 10 }],
      ['bash', { command: 'ls' }],
    ]);
    const lead = readBoth(`Let me read it.\n\n${OPENCODE}`, readTools);
    expect(names(lead)).toEqual([['read', { filePath: '/home/abc/some/file.java' }]]);
    expect(lead.content).toBe('Let me read it.');
  });

  it('keeps as text, byte for byte, every near miss', () => {
    for (const t of [
      // an undeclared tool, another case, an attribute, a blank in the tag
      OPENCODE.replace('<read>', '<view>'),
      OPENCODE.replace('<read>', '<Read>'),
      OPENCODE.replace('<read>', '<read path="x">'),
      OPENCODE.replace('<read>', '<read >'),
      // no <parameter= after it (JSON, prose), the element's own closer, no </function>
      '<tool_call>\n<read>\n{"filePath": "a.java"}\n</tool_call>',
      '<tool_call>\n<read>\nthe file a.java\n</function>\n</tool_call>',
      OPENCODE.replace('</function>', '</read>'),
      OPENCODE.replace('</function>\n', ''),
      // a key the tool lacks, a wrong type, no required key
      OPENCODE.replaceAll('filePath', 'path'),
      '<tool_call>\n<read>\n<parameter=filePath>\na\n</parameter>\n<parameter=limit>\nten\n</parameter>\n</function>\n</tool_call>',
      '<tool_call>\n<read>\n<parameter=offset>\n1\n</parameter>\n</function>\n</tool_call>',
      // never closed
      '<tool_call>\n<read>\n<parameter=filePath>\na.java\n</parameter>\n</function>',
    ])
      expect(readBoth(t, readTools), t).toEqual(text(t));
  });

  it('reads the same cut anywhere', () => {
    const cases = [OPENCODE, `Let me read it.\n\n${OPENCODE}`, OPENCODE.replace('</function>', '</read>')];
    assertRandomSplits(
      cases.length,
      (k) => ({ text: cases[k] as string, opts: () => options(readTools) }),
      24_002,
    );
  });
});

describe('random chunkings equal whole', () => {
  const cases = [
    `</details>\n${GLM_CALL}`,
    `${BLOCK}\n${GLM_CALL}`,
    `${BLOCK}\nFor example:\n${GLM_CALL}`,
    `<details type="reasoning">\n> x </details>\n${GLM_CALL}`,
    EXO,
    `${EXO}\nDone.`,
    'invoke name="get_weather">\nparameter name="location">Parisparameter>parameter>\ninvoke>',
  ];
  it('reads every case the same cut anywhere', () => {
    assertRandomSplits(
      cases.length,
      (k) => ({ text: cases[k] as string, opts: () => options(tools) }),
      24_001,
    );
  });
});
