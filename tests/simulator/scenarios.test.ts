import { describe, expect, it } from 'vitest';
import type { ChatMessage, ToolDef } from '../../protocol/openai.js';
import { BUILT_IN_SCENARIOS, resolveScenario, turnContext } from '../../simulator/scenarios.js';
import { LEAK_FORMATS } from '../../simulator/types.js';
import { WEATHER_TOOL } from './helpers.js';

const tools = [WEATHER_TOOL] as ToolDef[];
const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('turnContext', () => {
  it('counts assistant messages as the turn and finds the last user text and tool result', () => {
    const ctx = turnContext(
      [
        user('first'),
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'a', content: [{ type: 'text', text: '21C' }] },
      ],
      tools,
    );
    expect(ctx).toMatchObject({
      turn: 1,
      lastUserText: 'first',
      lastToolResult: '21C',
      afterToolResult: true,
    });
  });
});

describe('built-in scenarios', () => {
  it('lists demo, prose, tools, echo and one leak scenario per format', () => {
    expect(BUILT_IN_SCENARIOS).toEqual(
      expect.arrayContaining(['demo', 'prose', 'tools', 'echo', ...LEAK_FORMATS.map((f) => `leak-${f}`)]),
    );
  });

  it('leak-<format> leaks a call to the first tool on turn 0, then answers in prose', () => {
    for (const format of LEAK_FORMATS) {
      const fn = resolveScenario(`leak-${format}`);
      const first = fn(turnContext([user('weather?')], tools));
      expect(first).toEqual({
        leak: { format, calls: [{ name: 'get_weather', arguments: { location: 'Paris', unit: 'celsius' } }] },
      });
      expect(
        'say' in fn(turnContext([user('q'), { role: 'assistant', content: 'x' }, user('again')], tools)),
      ).toBe(true);
    }
  });

  it('tools calls properly on turn 0 and answers after the result', () => {
    const fn = resolveScenario('tools');
    expect(fn(turnContext([user('q')], tools))).toEqual({
      call: [{ name: 'get_weather', arguments: { location: 'Paris', unit: 'celsius' } }],
    });
    expect(
      fn(
        turnContext([user('q'), { role: 'assistant', content: '' }, { role: 'tool', content: '21C' }], tools),
      ),
    ).toEqual({
      say: expect.stringContaining('21C'),
    });
  });

  it('echo repeats the last user message; prose never calls', () => {
    expect(resolveScenario('echo')(turnContext([user('ping')], tools))).toEqual({ say: 'ping' });
    expect('say' in resolveScenario('prose')(turnContext([user('q')], tools))).toBe(true);
  });

  it('demo is deterministic, shows all three habits across questions, and answers plainly without tools', () => {
    const demo = resolveScenario('demo');
    const kinds = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const a = demo(turnContext([user(`question ${i}`)], tools));
      expect(demo(turnContext([user(`question ${i}`)], tools))).toEqual(a);
      kinds.add('leak' in a ? 'leak' : 'call' in a ? 'call' : 'say');
    }
    expect(kinds).toEqual(new Set(['leak', 'call', 'say']));
    expect('say' in demo(turnContext([user('hello')], []))).toBe(true);
  });
});

describe('the demo names the place the user asked about', () => {
  // The README's demo asks about several cities: a get_weather call for Paris every time looked
  // as if toolproof had mangled the arguments.
  const args = (text: string) => {
    const action = resolveScenario('demo')(turnContext([user(text)], tools)) as {
      leak?: { calls: Array<{ arguments: unknown }> };
      call?: Array<{ arguments: unknown }>;
      whenRequired?: { call?: Array<{ arguments: unknown }> };
    };
    return (action.leak?.calls ?? action.call ?? action.whenRequired?.call)?.[0]?.arguments;
  };
  it.each([
    ['What is the weather in Tokyo?', 'Tokyo'],
    ['Weather for New York please', 'New York'],
    ['How warm is it in São Paulo today?', 'São Paulo'],
    ['What is the weather in Paris?', 'Paris'],
  ])('%s -> %s', (text, location) => {
    expect(args(text)).toMatchObject({ location });
  });
  it('no place named: the sample city', () => {
    expect(args('is it warm?')).toMatchObject({ location: 'Paris' });
  });
});

describe('inline scenarios', () => {
  it('accepts an array of turns (the last repeats), {turns}, or one action, as JSON or objects', () => {
    const fn = resolveScenario('[{"say":"a"},{"say":"b"}]');
    const at = (turn: number) =>
      fn({ turn, tools, lastUserText: '', lastToolResult: '', afterToolResult: false, messages: [] });
    expect([at(0), at(1), at(5)]).toEqual([{ say: 'a' }, { say: 'b' }, { say: 'b' }]);
    expect(
      resolveScenario('{"turns":[{"raw":"x"}]}')({
        turn: 0,
        tools,
        lastUserText: '',
        lastToolResult: '',
        afterToolResult: false,
        messages: [],
      }),
    ).toEqual({ raw: 'x' });
    expect(
      resolveScenario({ say: 'one' } as never)({
        turn: 3,
        tools,
        lastUserText: '',
        lastToolResult: '',
        afterToolResult: false,
        messages: [],
      }),
    ).toEqual({ say: 'one' });
  });

  it('rejects unknown names and malformed JSON with a readable message', () => {
    expect(() => resolveScenario('nope')).toThrow(/unknown scenario "nope"/);
    expect(() => resolveScenario('{"say":')).toThrow(/not valid JSON/);
    expect(() => resolveScenario('{"foo":1}')).toThrow(/must be an action/);
    expect(() => resolveScenario([])).toThrow(/no turns/);
  });
});
