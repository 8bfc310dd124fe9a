/**
 * recall26: the one miss left in wild9-wild22 that a careful reader recovers with certainty, read
 * whole and one character at a time (readBoth), random chunkings equal whole:
 * - a call fence written on one line with a code body, not JSON (wild10, gemini-2.0-flash in
 *   AutoGen, microsoft/autogen#6505): ```` ```tool_codeprint(default_api.Greetings())``` ````, the
 *   body glued to its label where it opens with Gemini's own `default_api.` namespace, or after a
 *   blank (`parsers/formats/improvised.ts` CODE_ONE_LINE). The body is then read as a fenced call
 *   on its own lines is: the whole output, a declared tool, arguments that fit.
 */
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import { assertRandomSplits, options, readBoth, toolsOf } from './engine-helpers.js';

const S = { type: 'string' };
const GREETINGS: DeclaredTool = { name: 'Greetings', parameters: { type: 'object', properties: {} } };
const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { location: S, days: { type: 'integer' } },
    required: ['location'],
  },
};
const tools = toolsOf(GREETINGS, WEATHER);
const names = (r: ReturnType<typeof readBoth>) => r.calls.map((c) => [c[0], c[1]]);
const text = (t: string) => ({ calls: [], content: t });

/** microsoft/autogen#6505 (wild10): the issue's quote, twice the same. */
const AUTOGEN = '```tool_codeprint(default_api.Greetings())```';

describe('a call fence on one line with a code body (gemini-2.0-flash, microsoft/autogen#6505)', () => {
  it('reads the output the issue quotes', () => {
    const r = readBoth(AUTOGEN, tools);
    expect(r.calls).toEqual([['Greetings', {}, ['code-fence']]]);
    expect(r.content).toBeNull();
  });

  it('reads the body glued to the label or after a blank, with arguments, under tool_code or python', () => {
    for (const t of [
      '```tool_codeprint(default_api.get_weather(location="Paris", days=3))```',
      '```tool_codedefault_api.get_weather(location="Paris", days=3)```',
      '```tool_code print(default_api.get_weather(location="Paris", days=3))```',
      '```tool_code get_weather(location="Paris", days=3)```',
      '```python get_weather(location="Paris", days=3)```',
      '```pythonprint(default_api.get_weather(location="Paris", days=3))```',
      `  ${'```tool_code print(default_api.get_weather(location="Paris", days=3))```'}\n`,
    ])
      expect(names(readBoth(t, tools)), t).toEqual([['get_weather', { location: 'Paris', days: 3 }]]);
  });

  it('keeps as text, byte for byte, every near miss', () => {
    for (const t of [
      // prose before or after the fence
      `Use ${AUTOGEN}`,
      `${AUTOGEN} to greet.`,
      // a label glued to anything but Gemini's namespace: where the label ends is a guess
      '```tool_codeGreetings()```',
      '```pythonGreetings()```',
      '```tool_codeprint(Greetings())```',
      // a label outside the call-code pair, or none
      '```pythonic Greetings()```',
      '```sh Greetings()```',
      '``` Greetings()```',
      '```bashprint(default_api.Greetings())```',
      // an undeclared tool, a key the tool lacks, a missing required key, a wrong type
      '```tool_codeprint(default_api.Farewell())```',
      '```tool_codeprint(default_api.Greetings(x=1))```',
      '```tool_code print(default_api.get_weather(days=3))```',
      '```tool_code get_weather(location="Paris", days="three")```',
      // not a call: words after the call, an unclosed fence, a bare name
      '```tool_code get_weather(location="Paris") and then```',
      '```tool_code print(default_api.Greetings()',
      '```tool_code Greetings```',
    ])
      expect(readBoth(t, tools), t).toEqual(text(t));
  });

  it('streamed in random pieces equals whole', () => {
    const cases = [
      AUTOGEN,
      '```tool_code get_weather(location="Paris", days=3)```',
      '```tool_codeGreetings()```',
      `Use ${AUTOGEN}`,
    ];
    assertRandomSplits(cases.length, (k) => ({ text: cases[k]!, opts: () => options(tools) }), 26_001);
  });
});
