/**
 * The shared readers of the long-tail families: the XML-ish call reader, the JSON body reader,
 * the reopened-envelope guard, and linear time on hostile inputs for every long-tail marker.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../../hardening/loop-probe.js';
import {
  callsFromJson,
  defaultToCall,
  readXmlCalls,
  unlessReopened,
  type XmlCallSpec,
} from '../../../parsers/kit/long-tail.js';
import { MINIMAX_INVOKE } from '../../../parsers/formats/minimax-m2.js';
import { recoverMessage } from '../../../parsers/recover.js';
import type { DeclaredTool } from '../../../parsers/types.js';

const tool: DeclaredTool = {
  name: 'f',
  parameters: {
    type: 'object',
    properties: { n: { type: 'integer' }, s: { type: 'string' }, o: { type: 'object' } },
  },
};
const ctx = { tools: new Map([['f', tool]]) };

/** MiniMax's `<invoke>` / `<parameter>` spelling, with values read as JSON when the head says so. */
const SPEC: XmlCallSpec = {
  ...MINIMAX_INVOKE,
  valueMode: (attrs) => (attrs.includes('json') ? 'json' : 'schema'),
};

describe('readXmlCalls', () => {
  it('types values by the schema and keeps declared strings verbatim', () => {
    const r = readXmlCalls(
      '<invoke name="f"><parameter name="n"> 7 </parameter><parameter name="s"> 7 </parameter><parameter name="x">8</parameter></invoke>',
      SPEC,
      ctx,
    );
    expect(r).toEqual({ calls: [{ name: 'f', arguments: { n: 7, s: ' 7 ', x: '8' } }] });
  });

  it('decodes JSON when the attributes say so', () => {
    const r = readXmlCalls(
      '<invoke name="f"><parameter name="o" kind="json">{"a": [1]}</parameter></invoke>',
      SPEC,
      ctx,
    );
    expect(r).toEqual({ calls: [{ name: 'f', arguments: { o: { a: [1] } } }] });
  });

  it('refuses duplicates, stray text and unclosed tags', () => {
    const dup =
      '<invoke name="f"><parameter name="s">a</parameter><parameter name="s">b</parameter></invoke>';
    expect(readXmlCalls(dup, SPEC, ctx)).toHaveProperty('error');
    expect(readXmlCalls('<invoke name="f">hello</invoke>', SPEC, ctx)).toHaveProperty('error');
    expect(readXmlCalls('<invoke name="f"><parameter name="s">a', SPEC, ctx)).toHaveProperty('error');
    expect(readXmlCalls('', SPEC, ctx)).toHaveProperty('error');
  });
});

describe('callsFromJson', () => {
  it('reads one object, an array, or objects one per line', () => {
    const one = '{"name": "f", "arguments": {"n": 1}}';
    expect(callsFromJson(one, defaultToCall, false)).toEqual({ calls: [{ name: 'f', arguments: { n: 1 } }] });
    expect(callsFromJson(`[${one}, ${one}]`, defaultToCall, false)).toMatchObject({ calls: [{}, {}] });
    expect(callsFromJson(`${one}\n${one}\n`, defaultToCall, false)).toMatchObject({ calls: [{}, {}] });
  });

  it('refuses non-call shapes and unclosed JSON', () => {
    expect(callsFromJson('[1, 2]', defaultToCall, false)).toHaveProperty('error');
    expect(callsFromJson('[]', defaultToCall, false)).toHaveProperty('error');
    expect(callsFromJson('{"name": "f", "arguments": {', defaultToCall, false)).toHaveProperty('error');
  });
});

describe('unlessReopened', () => {
  it('refuses a cut-off body that holds the marker again, without reading it', () => {
    let reads = 0;
    const parse = unlessReopened(['<m>'], () => {
      reads++;
      return { calls: [] };
    });
    expect(parse('x <m> y', null, { truncated: true })).toEqual({ error: 'envelope cut off' });
    expect(reads).toBe(0);
    parse('x <m> y', null, { truncated: false });
    parse('x y', null, { truncated: true });
    expect(reads).toBe(2);
  });
});

describe('long-tail markers: 1 MB hostile inputs finish in bounded time', () => {
  const MB = 1 << 20;
  const rep = (s: string) => s.repeat(Math.ceil(MB / s.length)).slice(0, MB);
  const units = [
    '<|tool_call|>[',
    '<tool_call>[',
    '<function_call>{',
    'functools[{',
    '<|tools_prefix|>[{',
    '<|function_call|>{',
    '<|message_sep|>\n\nfunction call<|role_sep|>\n{',
    '<tool_calls>{',
    '<tool_calls>[',
    '<tool_calls><tool_call>x<tool_sep>',
    '<minimax:tool_call><invoke name="a">',
    '<｜DSML｜function_calls><｜DSML｜invoke name="a">',
    '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>',
    '<|open|>tools<|sep|><|open|>call tool="a',
    '<|START_ACTION|>[',
    '<seed:tool_call><function=a>',
    '<|tool_call>call:a{b:<|"|>',
    '<start_function_call>call:a{',
    '<function name="a">',
    "<|tool_call_start|>[a(b='",
    '<function_calls>a(',
    '>>>a\n{',
    '```json\n[{',
    '<tools>{',
    '<TOOLCALL>[',
    '<longcat_tool_call>{',
    ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="a">]<]minimax[>[<b>',
    '<mm:think>',
    '<|action_start|><|plugin|>{',
    '<|channel>thought',
  ];
  const tools = new Map([['get_weather', { name: 'get_weather' }]]);
  for (const unit of units) {
    it(JSON.stringify(unit), () => {
      const t0 = processCpuMs();
      recoverMessage({ content: rep(unit), reasoning: null }, { tools, newId: () => 'id' });
      const ms = processCpuMs() - t0;
      expect(ms, `${(ms).toFixed(0)} ms`).toBeLessThan(5000);
    });
  }
});
