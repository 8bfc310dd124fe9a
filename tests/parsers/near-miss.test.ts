/**
 * Issue 30, near misses of known families: each read is named in the call's `repairs` (the
 * conformance fixtures check calls and content, not repair names), streaming equals the whole
 * text, and the scanning they add costs at most about 4x for 4x the input.
 * Fixtures with sources: tests/fixtures/parsers/llama3-near-miss.json and the family files.
 */
import { describe, expect, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';

const run = {
  name: 'run_command',
  parameters: {
    type: 'object',
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};
const tools = toolsOf(run);

/** The whole text read, after checking that streaming it char by char reads the same. */
function readBoth(text: string, declared: ReturnType<typeof toolsOf>) {
  const r = whole(text, options(declared));
  const s = streamed(chunks(text, 1), options(declared));
  expect(s.calls).toEqual(r.calls);
  expect(s.content).toBe(r.content);
  return r;
}
const read = (text: string) => readBoth(text, tools);

describe('Llama 3.x near misses of <function=NAME>{json}</function>', () => {
  const shapes: [string, string, string[]][] = [
    ['a blank where > belongs', '<function=run_command {"command": "ls"}</function>', ['space-for-gt']],
    ['= where > belongs', '<function=run_command={"command": "ls"}</function>', ['equals-for-gt']],
    ['no >', '<function=run_command{"command": "ls"}</function>', ['missing-gt']],
    ['> after the arguments', '<function=run_command{"command": "ls"}></function>', ['gt-after-arguments']],
    [
      'a blank, > after the arguments',
      '<function=run_command {"command": "ls"}></function>',
      ['gt-after-arguments'],
    ],
    [
      'parenthesized arguments',
      '<function=run_command({"command": "ls"})</function>',
      ['parenthesized-arguments'],
    ],
    [
      'a blank and no </function> at the end of output',
      '<function=run_command {"command": "ls"} ',
      ['space-for-gt', 'unclosed-envelope'],
    ],
  ];
  for (const [what, text, repairs] of shapes) {
    it(`${what}: read, repair named`, () => {
      const r = read(text);
      expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
        ['run_command', '{"command":"ls"}', repairs],
      ]);
      expect(r.leaks.map((l) => [l.outcome, l.repairs])).toEqual([['recovered', repairs]]);
    });
  }

  it('the well-formed envelope needs no repair', () => {
    const r = read('<function=run_command>{"command": "ls"}</function>');
    expect(r.calls.map((c) => c.repairs)).toEqual([[]]);
  });

  for (const text of [
    '<function=run_command {"cmd": "ls"}</function>',
    '<function=get_time {"zone": "UTC"}</function>',
    '<function=run_command=({"command": "ls"})</function>',
    '<function=run_command({"command": "ls"}</function>',
    '<function=run_command {"command": "ls"} {"command": "pwd"}</function>',
    '<function=run_command {"command": "ls"} and more</function>',
    '<function=run_command ({"command": "ls"})</function>',
    "<function=run_command {'command': 'ls'}</function>",
  ]) {
    it(`not one schema-fitting repair, stays text: ${text}`, () => {
      const r = read(text);
      expect(r.calls).toEqual([]);
      expect(r.content).toBe(text);
    });
  }

  it('costs at most about 4x for 4x the output (near misses, cut ones, prose)', () => {
    const units = [
      '<function=run_command {"command": "ls"}</function>',
      '<function=run_command({"command": "ls"})</function>',
      '<function=run_command{"command": "a b"}',
      '<function=run_command ',
      '<function=',
      '</function>',
      '{"command": "x"}',
      'Sure, ',
      ' ',
      '\n',
      '(',
    ];
    budget(
      'llama near miss',
      (size, rnd) => soup(rnd, size, units),
      (text) => streamed(chunks(text, 64), options(tools)),
      { from: 2000, max: 256_000 },
      3001,
    );
  }, 120_000);
});

describe('Llama near misses inside <tool_call> (nearmiss19)', () => {
  it('the wrapper goes with the call: no content, one recovered leak, repair named', () => {
    const r = read('<tool_call>\n<function=run_command {"command": "ls"}</function>\n</tool_call>');
    expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
      ['run_command', '{"command":"ls"}', ['space-for-gt']],
    ]);
    expect(r.content).toBeNull();
    expect(r.leaks.map((l) => [l.outcome, l.repairs])).toEqual([['recovered', ['space-for-gt']]]);
  });

  it('an undeclared name stays content byte for byte', () => {
    const text = '<tool_call>\n<function=run {"command": "ls"}</function>\n</tool_call>';
    const r = read(text);
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
  });

  // one wrapper around many blocks (each read once), wrappers never closed, and cut ones
  for (const [what, lead] of [
    ['wrappers', ''],
    ['one wrapper never closed', '<tool_call>\n'],
  ] as const) {
    it(`costs at most about 4x for 4x the output (${what})`, () => {
      const units = [
        '<tool_call>\n',
        '</tool_call>',
        '<function=run_command {"command": "ls"}</function>\n',
        '<function=run_command({"command": "ls"})</function>',
        '<function=',
        '</function>',
        ' ',
        '\n',
      ];
      budget(
        `llama near miss in <tool_call>, ${what}`,
        (size, rnd) => soup(rnd, size, lead === '' ? units : units.slice(2), lead === '' ? 0.3 : 0, lead),
        (text) => streamed(chunks(text, 64), options(tools)),
        { from: 2000, max: 256_000 },
        3019,
      );
    }, 120_000);
  }
});

describe('harmony with its control tokens stripped', () => {
  const weather = {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  const wt = toolsOf(weather);
  const both = (text: string) => readBoth(text, wt);

  it('commentary to=functions.NAME json{…} ending the output: read, repair named', () => {
    const r = both('commentary to=functions.get_weather json{"city":"Paris"}');
    expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
      ['get_weather', '{"city":"Paris"}', ['stripped-control-tokens']],
    ]);
  });

  it('text after the object leaves everything as text', () => {
    const text = 'commentary to=functions.get_weather json{"city":"Paris"} and then I answer.';
    const r = both(text);
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
  });

  it('costs at most about 4x for 4x the output', () => {
    const units = [
      'commentary to=functions.',
      'get_weather',
      ' json',
      '{"city":"P"}',
      'Sure, ',
      ' ',
      '{',
      '\n',
    ];
    budget(
      'harmony stripped',
      (size, rnd) => soup(rnd, size, units),
      (text) => streamed(chunks(text, 64), options(wt)),
      { from: 2000, max: 256_000 },
      3002,
    );
  }, 120_000);

  // Headers whose objects never close, each read to the end of the output at finish: one walk
  // each was quadratic (164 KB of them took 0.9 s of CPU, 1 MB would take half a minute); the
  // scanner's shared walk (parsers/kit/json-ends.ts) reads them all in one. The second shape puts
  // every object in one string (\" escapes the quote for the objects already open, opens one for
  // the new): a scan that stops at the next marker outside strings does not help there.
  for (const [what, lead, unit] of [
    ['never closed', '', 'commentary to=functions.get_weather json{'],
    [
      'all in one string',
      'commentary to=functions.get_weather json{"',
      'commentary to=functions.get_weather json{\\"',
    ],
  ] as const) {
    it(`headers whose objects are ${what} cost about 4x for 4x`, () => {
      budget(
        `harmony stripped, ${what}`,
        (size) => `${lead}${unit.repeat(Math.ceil(size / unit.length))}}`,
        (text) => streamed(chunks(text, 64), options(wt)),
        { from: 2000, max: 256_000 },
        3003,
      );
    }, 120_000);
  }
});

describe('Qwen3-Coder calls one tag away from the template', () => {
  const bash = {
    name: 'bash',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  };
  const bt = toolsOf(bash);
  const both = (text: string) => readBoth(text, bt);

  it('<parameter=NAME> where <function=NAME> belongs: read, repair named', () => {
    const r = both(
      '<tool_call>\n<parameter=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>',
    );
    expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
      ['bash', '{"command":"ls"}', ['parameter-for-function']],
    ]);
  });

  it('a whole output that lost <function: read, repair named', () => {
    const r = both('=bash><parameter=command>ls</parameter></function>');
    expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
      ['bash', '{"command":"ls"}', ['missing-function-open']],
    ]);
  });

  it('costs at most about 4x for 4x the output', () => {
    const units = [
      '<tool_call>',
      '<parameter=bash>',
      '<parameter=command>',
      'ls',
      '</parameter>',
      '</function>',
      '</tool_call>',
      '>',
      'Sure, ',
      '\n',
    ];
    for (const lead of ['', '=bash>']) {
      budget(
        `qwen near miss (lead ${JSON.stringify(lead)})`,
        (size, rnd) => soup(rnd, size, units, 0.3, lead),
        (text) => streamed(chunks(text, 64), options(bt)),
        { from: 2000, max: 256_000 },
        3003,
      );
    }
  }, 120_000);
});

describe('MiniMax-M2 block opened by a [Tool Use: NAME] line', () => {
  const ask = {
    name: 'ask',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  };
  const at = toolsOf(ask);
  const text =
    '[Tool Use: ask]\n<parameter name="question">Which one?</parameter>\n</invoke>\n</minimax:tool_call>';

  it('read, repair named, streamed equal to whole', () => {
    const r = whole(text, options(at));
    expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
      ['ask', '{"question":"Which one?"}', ['tool-use-header']],
    ]);
    const s = streamed(chunks(text, 1), options(at));
    expect(s.calls).toEqual(r.calls);
    expect(s.content).toBe(r.content);
  });

  it('costs at most about 4x for 4x the output (lines without ] or closers)', () => {
    const units = [
      '[Tool Use: ',
      'ask',
      ']',
      '\n',
      '<parameter name="question">',
      'x',
      '</parameter>',
      '</invoke>',
      ' ',
    ];
    budget(
      'tool-use header',
      (size, rnd) => soup(rnd, size, units, 0),
      (t) => streamed(chunks(t, 64), options(at)),
      { from: 2000, max: 256_000 },
      3004,
    );
  }, 120_000);
});
