/**
 * Every parser fixture through the real proxy, streamed and not: the simulator plays the
 * fixture's raw text as the model's content (a backend whose tool parser missed the calls),
 * and the openai client must see exactly the fixture's calls and leftover content. Fixtures
 * that need upstream reasoning are covered by the conformance suite only (the simulator has no
 * raw reasoning channel); those whose prompt opened the reasoning run against a model configured
 * with `startsInReasoning`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureCase, loadFixtures } from '../parsers/fixtures.js';
import { collectStream, type Stack, startStack } from '../server/stack.js';

/** Header-safe scenario: JSON with every non-ASCII character escaped. */
function scenarioHeader(text: string): string {
  return JSON.stringify([{ raw: text }]).replace(
    /[\u007f-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function request(c: FixtureCase) {
  return {
    model: 'sim',
    messages: [{ role: 'user' as const, content: 'go' }],
    tools: c.tools.map((t) => ({
      type: 'function' as const,
      function: { name: t.name, parameters: t.parameters ?? { type: 'object', properties: {} } },
    })),
  };
}

/**
 * Each distinct case once: 248 of the 3,611 are another file's case again (the same text, tools,
 * expectation and setting; peer imports of wild ones), and through the proxy they prove the same
 * thing twice (two requests each, ~10 ms of CPU a request). The conformance suite reads them all.
 */
const seen = new Set<string>();
const all = loadFixtures().flatMap(({ file, cases }) =>
  cases
    .filter((c) => c.reasoning === undefined && c.text.trim() !== '')
    .filter((c) => {
      const key = JSON.stringify([c.text, c.tools, c.expect, c.startsInReasoning ?? false]);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .map((c) => ({ file, c })),
);

/**
 * One proxy per setting: fixtures whose prompt opened the reasoning (`startsInReasoning`) run
 * against a model configured so, the rest against the default.
 */
describe.each([
  { group: 'output starting as content', startsInReasoning: false },
  { group: 'output starting in reasoning (the prompt opened it)', startsInReasoning: true },
])('parser fixtures through the proxy: $group', ({ startsInReasoning }) => {
  const cases = all.filter(({ c }) => (c.startsInReasoning ?? false) === startsInReasoning);
  let stack: Stack;
  const failures: string[] = [];
  const streamedContentDiffers: string[] = [];
  beforeAll(async () => {
    // recovery 'always': fixtures without tools (a think split, prose) are read as the engine reads them.
    stack = await startStack({
      sim: { personality: 'vllm' },
      file: { defaults: { forceToolUse: false, recovery: 'always', startsInReasoning } },
    });
    for (const { file, c } of cases) {
      const headers = { 'x-sim-scenario': scenarioHeader(c.text) };
      const want = c.expect.calls.map((x) => ({ name: x.name, arguments: x.arguments }));
      const res = await stack.client.chat.completions.create(request(c), { headers });
      const msg = res.choices[0]!.message;
      const got = (msg.tool_calls ?? []).map((t) =>
        t.type === 'function' ? { name: t.function.name, arguments: JSON.parse(t.function.arguments) } : null,
      );
      const streamed = await collectStream(
        await stack.client.chat.completions.create({ ...request(c), stream: true }, { headers }),
      );
      const gotStreamed = streamed.calls.map((t) => ({ name: t.name, arguments: JSON.parse(t.args) }));
      const label = `${file}: ${c.name}`;
      if (JSON.stringify(got) !== JSON.stringify(want))
        failures.push(`${label}: calls ${JSON.stringify(got)}`);
      if ((msg.content || null) !== c.expect.content)
        failures.push(`${label}: content ${JSON.stringify(msg.content)}`);
      if (JSON.stringify(gotStreamed) !== JSON.stringify(got))
        failures.push(`${label}: streamed calls differ`);
      if ((streamed.content || null) !== (msg.content || null)) streamedContentDiffers.push(label);
    }
  }, 300_000);
  afterAll(() => stack.close());

  it('recovers every fixture, streamed and not, with the same calls and the expected content', () => {
    expect(cases.length).toBeGreaterThan(100);
    expect(failures).toEqual([]);
  });

  it('streams content recovered or left alone exactly as the non-streamed message has it', () => {
    // An unrecovered envelope used to reach a streaming client twice (its raw text, then the
    // corrective retry's answer after it); the held turn of a retry now drops it as the
    // non-streamed path does.
    expect(streamedContentDiffers).toEqual([]);
  });
});
