/**
 * The lead-in gate (issue 30, parsers/engine/lead-in.ts, docs/recall.md "A sentence, then the
 * call"): a declared call with valid arguments that ends the output after an announcing sentence
 * is read, with the sentence as content byte for byte; the same call after an explanation, or
 * followed by more prose, is not. The corpora's negatives of that shape stay text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { announces, LEAD_MAX } from '../../parsers/engine/lead-in.js';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';
import { type FixtureCase, optionsFor } from './fixtures.js';

const tools = toolsOf({
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
});
const ctx = { tools };

describe('announces: what a lead-in may be', () => {
  it.each([
    "I'll look that up.",
    'Let me check the weather in Paris.\n',
    'Checking the forecast now!',
    'Action:',
    '好的，我来查一下。',
    'I will use the `get_weather` tool.',
    'Sure, turning on the bedroom lights',
  ])('announces: %j', (lead) => {
    expect(announces(lead, ctx)).toBe(true);
  });

  it.each([
    ['nothing', '   \n'],
    ['an example', 'For example:'],
    ['e.g.', 'Call it with the city, e.g.'],
    ['you can', 'You can use the get_weather tool:'],
    ['like this', 'Call it like this:'],
    ["here's how", "Here's how:"],
    ['a hypothetical', 'I would call:'],
    ['a refusal', "I can't run tools, but:"],
    ['a question', 'Shall I run this?'],
    ['an unfinished sentence', 'I will check the weather,'],
    ['a purpose heading', 'To query the weather for a city:'],
    ['a code fence', 'Run ```ls``` first.'],
    ['braces', 'The result was {"ok": true}. Now:'],
    ['a tag', 'I closed the </think> already.'],
    ['a declared tool written as a call', 'I tried get_weather(city) already.'],
    ['Chinese "for example"', '例如：'],
    ['longer than LEAD_MAX', `${'I will check. '.repeat(Math.ceil(LEAD_MAX / 14) + 1)}`],
  ])('refuses %s', (_why, lead) => {
    expect(announces(lead, ctx)).toBe(false);
  });
});

// ------------------------------------------------------------------ property

const VERBS = [
  "I'll check",
  'Let me look up',
  'I will fetch',
  'Now I am getting',
  'OK, checking',
  'Looking up',
];
const OBJECTS = ['the weather', 'that for you', 'the current forecast', 'it'];
const ENDS = ['.', '!', ':', '...'];
const city = fc.stringMatching(/^[A-Za-z][A-Za-z ]{0,20}[A-Za-z]$/);
const unit = fc.option(fc.constantFrom('celsius', 'fahrenheit'), { nil: undefined });
const sentence = fc
  .tuple(fc.constantFrom(...VERBS), fc.constantFrom(...OBJECTS), fc.constantFrom(...ENDS))
  .map(([v, o, e]) => `${v} ${o}${e}`);
const gap = fc.constantFrom('\n', '\n\n', ' \n', '\n\n\n');

/** The call in every whole-output shape the gate is built for. */
function shapes(args: Record<string, string>): string[] {
  const json = JSON.stringify({ name: 'get_weather', arguments: args });
  const kw = Object.entries(args)
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ');
  const elems = Object.entries(args)
    .map(([k, v]) => `<${k}>${v}</${k}>`)
    .join('\n');
  return [
    json,
    `\`\`\`json\n${json}\n\`\`\``,
    `\`\`\`\n${json}\n\`\`\``,
    `<tool>${json}</tool>`,
    `<response>\n${json}\n</response>`,
    `<get_weather>\n${elems}\n</get_weather>`,
    `get_weather(${kw})`,
  ];
}

const argsOf = (c: string, u: string | undefined): Record<string, string> =>
  u === undefined ? { city: c } : { city: c, unit: u };

describe('property: an announcing sentence, then a declared call with valid arguments', () => {
  it('is recovered with the sentence as content, streamed equal to whole', () => {
    fc.assert(
      fc.property(
        sentence,
        gap,
        city,
        unit,
        fc.nat(6),
        fc.integer({ min: 1, max: 9 }),
        (s, g, c, u, k, size) => {
          const args = argsOf(c, u);
          const call = shapes(args)[k] as string;
          const text = `${s}${g}${call}`;
          const r = whole(text, options(tools));
          expect(r.calls.map((x) => [x.name, JSON.parse(x.arguments)])).toEqual([['get_weather', args]]);
          expect(r.content).toBe(s);
          expect(r.calls[0]?.repairs).toContain('lead-in');
          const st = streamed(chunks(text, size), options(tools));
          expect(st.calls).toEqual(r.calls);
          expect(st.content).toBe(r.content);
        },
      ),
      { numRuns: 300, seed: 30 },
    );
  });

  it('is not recovered after "for example", nor when more prose follows', () => {
    const example = fc.constantFrom('For example:', 'For example, ', 'e.g.', 'You can call it like this:');
    const after = fc.constantFrom(
      '\nThat is how a call looks.',
      '\n\nThis will fetch the weather.',
      ' Done.',
    );
    fc.assert(
      fc.property(example, sentence, gap, city, unit, fc.nat(6), after, (ex, s, g, c, u, k, tail) => {
        const call = shapes(argsOf(c, u))[k] as string;
        for (const text of [`${ex}${g}${call}`, `${ex} ${s}${g}${call}`, `${s}${g}${call}${tail}`]) {
          const r = whole(text, options(tools));
          expect(r.calls, text).toEqual([]);
          expect(r.content).toBe(text);
          const st = streamed(chunks(text, 3), options(tools));
          expect(st.calls).toEqual([]);
          expect(st.content).toBe(text);
        }
      }),
      { numRuns: 300, seed: 31 },
    );
  });
});

// ------------------------------------------------------------------ corpora

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

function corpus(): { file: string; c: FixtureCase }[] {
  const out: { file: string; c: FixtureCase }[] = [];
  for (const dir of ['parsers', 'recall']) {
    for (const f of readdirSync(join(FIXTURES, dir)).filter((x) => x.endsWith('.json'))) {
      const cases = JSON.parse(readFileSync(join(FIXTURES, dir, f), 'utf8')) as FixtureCase[];
      for (const c of cases) out.push({ file: `${dir}/${f}`, c });
    }
  }
  return out;
}

/**
 * The lead-in shape, found independently of the gate: prose, then (after a line break or
 * sentence punctuation) a fence, an object, a list of objects or a tag, within LEAD_MAX.
 */
function leadInShaped(text: string): boolean {
  const first = text.length - text.trimStart().length;
  const re = /(?:\n\s*|[.:!。：！]\s*)(```|\{|\[\s*\{|<[A-Za-z_])/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const p = m.index + m[0].length - (m[1] as string).length;
    if (p - first > LEAD_MAX) return false;
    if (text.slice(first, p).trim() !== '') return true;
  }
  return false;
}

describe('the corpora: every negative with a lead-in shape stays text', () => {
  const negatives = corpus().filter(({ c }) => c.expect.calls.length === 0 && leadInShaped(c.text));

  it('there are enough of them to mean something', () => {
    // 258 when the gate was written (tests/fixtures/parsers and tests/fixtures/recall)
    console.log(`[lead-in] corpus negatives with a lead-in shape: ${negatives.length}`);
    expect(negatives.length).toBeGreaterThanOrEqual(250);
  });

  it('none is read as a call, and streaming one character at a time equals the whole', () => {
    const read: string[] = [];
    for (const { file, c } of negatives) {
      const r = whole(c.text, optionsFor(c));
      // a case whose expectation is a call kept as text on purpose is still a negative here
      if (r.calls.length > 0) read.push(`${file}: ${c.name}`);
      const st = streamed(chunks(c.text, 1), optionsFor(c));
      expect(st.calls, c.name).toEqual(r.calls);
      expect(st.content, c.name).toBe(r.content);
    }
    expect(read).toEqual([]);
  });
});
