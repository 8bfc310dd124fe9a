import { describe, expect, it } from 'vitest';
import type { ToolDef } from '../../protocol/openai.js';
import { type GenerateContext, generate } from '../../simulator/generate.js';
import type { TurnAction } from '../../simulator/types.js';
import { FINAL_ANSWER_TOOL, WEATHER_TOOL } from './helpers.js';

const tools = [WEATHER_TOOL] as ToolDef[];
const base: GenerateContext = {
  personality: 'vllm',
  tools,
  toolChoice: 'auto',
  ignoreRequired: false,
  maxTokens: null,
};

function gen(action: TurnAction, ctx: Partial<GenerateContext> = {}) {
  const out = generate(action, { ...base, ...ctx });
  if (out.kind !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(out)}`);
  return out.generation;
}

describe('generate', () => {
  it('answers prose with finish stop and calls with finish tool_calls', () => {
    expect(gen({ say: 'hi' })).toMatchObject({ content: 'hi', calls: [], finish: 'stop' });
    expect(gen({ call: [{ name: 'get_weather', arguments: { location: 'Oslo' } }] })).toMatchObject({
      content: '',
      calls: [{ name: 'get_weather', arguments: '{"location":"Oslo"}' }],
      finish: 'tool_calls',
    });
  });

  it('keeps string arguments verbatim (model whitespace, broken JSON)', () => {
    expect(
      gen({ call: [{ name: 'get_weather', arguments: '{"location" :"Paris"' }] }).calls[0]?.arguments,
    ).toBe('{"location" :"Paris"');
  });

  it('writes leaks as content text, not as calls', () => {
    const g = gen({
      leak: {
        format: 'hermes',
        calls: [{ name: 'get_weather', arguments: { location: 'Rome' } }],
        before: 'Sure.\n',
      },
    });
    expect(g.calls).toEqual([]);
    expect(g.finish).toBe('stop');
    expect(g.content).toBe(
      'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "Rome"}}\n</tool_call>',
    );
  });

  describe('tool_choice "required" (guided decoding)', () => {
    it('turns prose into a final_answer call when such a tool is declared', () => {
      const g = gen(
        { say: 'It is sunny.' },
        { toolChoice: 'required', tools: [WEATHER_TOOL, FINAL_ANSWER_TOOL] as ToolDef[] },
      );
      expect(g.calls).toEqual([{ name: 'final_answer', arguments: '{"answer":"It is sunny."}' }]);
      expect(g.content).toBe('');
      expect(g.finish).toBe('tool_calls');
    });

    it('matches final_answer variants by prefix', () => {
      const variant = {
        ...FINAL_ANSWER_TOOL,
        function: { ...FINAL_ANSWER_TOOL.function, name: 'final_answer_2' },
      };
      expect(
        gen({ say: 'x' }, { toolChoice: 'required', tools: [WEATHER_TOOL, variant] as ToolDef[] }).calls[0]
          ?.name,
      ).toBe('final_answer_2');
    });

    it('calls the first declared tool with schema-plausible arguments otherwise', () => {
      const g = gen({ say: 'prose' }, { toolChoice: 'required' });
      expect(g.calls).toEqual([{ name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' }]);
    });

    it('turns a leak into structured calls', () => {
      const g = gen(
        { leak: { format: 'pythonic', calls: [{ name: 'get_weather', arguments: { location: 'Lima' } }] } },
        { toolChoice: 'required' },
      );
      expect(g.calls).toEqual([{ name: 'get_weather', arguments: '{"location":"Lima"}' }]);
      expect(g.content).toBe('');
    });

    it('is ignored with ignoreRequired, and without tools', () => {
      expect(gen({ say: 'p' }, { toolChoice: 'required', ignoreRequired: true }).calls).toEqual([]);
      expect(gen({ say: 'p' }, { toolChoice: 'required', tools: [] }).calls).toEqual([]);
    });
  });

  it('honours a named tool_choice on vLLM and ignores it on llama-server', () => {
    const named = { type: 'function', function: { name: 'final_answer' } };
    const both = [WEATHER_TOOL, FINAL_ANSWER_TOOL] as ToolDef[];
    expect(gen({ say: 'ok' }, { toolChoice: named, tools: both }).calls).toEqual([
      { name: 'final_answer', arguments: '{"answer":"ok"}' },
    ]);
    expect(gen({ say: 'ok' }, { toolChoice: named, tools: both, personality: 'llama-server' }).calls).toEqual(
      [],
    );
  });

  it('keeps only the first call on vLLM when parallel_tool_calls is false, all of them on llama-server', () => {
    const two: TurnAction = {
      call: [
        { name: 'get_weather', arguments: { location: 'A' } },
        { name: 'get_weather', arguments: { location: 'B' } },
      ],
    };
    expect(gen(two, { parallelToolCalls: false }).calls).toHaveLength(1);
    expect(gen(two, { parallelToolCalls: false, personality: 'llama-server' }).calls).toHaveLength(2);
    expect(gen(two, { parallelToolCalls: true }).calls).toHaveLength(2);
  });

  it('answers a json_schema response_format with schema-shaped JSON, over tools', () => {
    const rf = {
      type: 'json_schema',
      json_schema: {
        name: 'yn',
        schema: {
          type: 'object',
          properties: { answer: { type: 'string', enum: ['yes', 'no'] } },
          required: ['answer'],
        },
      },
    };
    for (const personality of ['vllm', 'llama-server'] as const) {
      const g = gen({ say: 'prose' }, { responseFormat: rf, personality, toolChoice: 'required' });
      expect(g).toMatchObject({ content: '{"answer":"yes"}', calls: [], finish: 'stop' });
    }
    expect(gen({ say: 'p' }, { responseFormat: { type: 'json_object' } }).content).toBe('{"answer":"p"}');
    expect(
      gen({ say: 'p' }, { responseFormat: { type: 'json_object' }, personality: 'llama-server' }).content,
    ).toBe('p');
  });

  it('strips leading whitespace on llama-server when tools are active, not with "none"', () => {
    expect(gen({ say: '  hi' }, { personality: 'llama-server' }).content).toBe('hi');
    expect(gen({ say: '  hi' }, { personality: 'llama-server', toolChoice: 'none' }).content).toBe('  hi');
    expect(gen({ say: '  hi' }).content).toBe('  hi');
  });

  it('leaves calls as text with tool_choice "none"', () => {
    const g = gen(
      { call: [{ name: 'get_weather', arguments: { location: 'Oslo' } }] },
      { toolChoice: 'none' },
    );
    expect(g.calls).toEqual([]);
    expect(g.content).toContain('<tool_call>');
  });

  it('cuts at truncateAt and at max_tokens with finish length, even inside a call', () => {
    expect(gen({ say: 'abcdef ghijkl' }, {}).finish).toBe('stop');
    const cut = gen({ say: 'abcdef ghijkl', truncateAt: 4 });
    expect(cut).toMatchObject({ content: 'abcd', finish: 'length' });
    const mid = gen({ call: [{ name: 'get_weather', arguments: { location: 'Paris' } }], truncateAt: 5 });
    expect(mid).toMatchObject({ finish: 'length', calls: [{ name: 'get_weather', arguments: '{"loc' }] });
    expect(gen({ say: 'one two three four' }, { maxTokens: 2 })).toMatchObject({
      content: 'one two',
      finish: 'length',
    });
  });

  it('ends the output before the first stop string, content or call arguments (finish stop)', () => {
    // ../shared/wire llama-server chat_plain_stop_sequence: the stop string not returned, finish "stop".
    expect(gen({ say: 'Run:\n```sh\nls\n```' }, { stop: ['```'] })).toMatchObject({
      content: 'Run:\n',
      finish: 'stop',
      stopMatched: '```',
    });
    // Forced, the answer is the call's JSON: the stop string cuts it there.
    const forced = gen(
      { say: 'a```b' },
      { tools: [FINAL_ANSWER_TOOL] as ToolDef[], toolChoice: 'required', stop: ['```'] },
    );
    expect(forced.calls).toEqual([{ name: 'final_answer', arguments: '{"answer":"a' }]);
    expect(forced.finish).toBe('stop');
    // A stop past max_tokens is never reached.
    expect(gen({ say: 'one two three four STOP' }, { stop: ['STOP'], maxTokens: 2 })).toMatchObject({
      finish: 'length',
    });
    expect(gen({ say: 'no match' }, { stop: ['zz', ''] })).toMatchObject({
      content: 'no match',
      finish: 'stop',
    });
    expect(gen({ say: 'no match' }, { stop: ['zz'] }).stopMatched).toBeUndefined();
  });

  it('puts reasoning in reasoning_content, or as <think> text', () => {
    expect(gen({ think: 'hmm', say: 'yes' })).toMatchObject({ reasoning: 'hmm', content: 'yes' });
    expect(gen({ think: 'hmm', thinkAsText: true, say: 'yes' })).toMatchObject({
      reasoning: null,
      content: '<think>hmm</think>\n\nyes',
    });
  });

  it('returns scripted errors before generation, and keeps mid-stream ones for the stream', () => {
    expect(generate({ error: { status: 503, message: 'busy' } }, base)).toEqual({
      kind: 'error',
      error: { status: 503, message: 'busy' },
    });
    expect(gen({ raw: 'partial', error: { status: 500, message: 'boom', midStream: true } })).toMatchObject({
      content: 'partial',
      midStreamError: { status: 500, message: 'boom' },
    });
  });
});
