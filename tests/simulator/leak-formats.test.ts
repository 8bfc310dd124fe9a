import { describe, expect, it } from 'vitest';
import { renderLeak } from '../../simulator/leak-formats.js';
import { LEAK_FORMATS, type LeakFormat } from '../../simulator/types.js';

const CALL = { name: 'get_weather', arguments: { location: 'Paris', days: 2, metric: true } };

const EXPECTED: Record<LeakFormat, string> = {
  hermes:
    '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris", "days": 2, "metric": true}}\n</tool_call>',
  'qwen3-coder':
    '<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n</function>\n</tool_call>',
  'llama3-json': '{"name": "get_weather", "parameters": {"location": "Paris", "days": 2, "metric": true}}',
  mistral:
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Paris", "days": 2, "metric": true}}]',
  'bare-json': '{"name": "get_weather", "arguments": {"location": "Paris", "days": 2, "metric": true}}',
  pythonic: "[get_weather(location='Paris', days=2, metric=True)]",
  deepseek:
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"location": "Paris", "days": 2, "metric": true}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
  glm: '<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n<arg_key>metric</arg_key>\n<arg_value>true</arg_value>\n</tool_call>',
  'kimi-k2':
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"location":"Paris","days":2,"metric":true}<|tool_call_end|><|tool_calls_section_end|>',
  'gpt-oss':
    '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"Paris","days":2,"metric":true}<|call|>',
};

describe('renderLeak', () => {
  it.each(LEAK_FORMATS.map((f) => [f]))('writes a %s call the way that family does', (format) => {
    expect(renderLeak(format, [CALL])).toBe(EXPECTED[format]);
  });

  it('writes several calls per family convention', () => {
    const two = [CALL, { name: 'get_time', arguments: { tz: 'UTC' } }];
    expect(renderLeak('hermes', two).match(/<tool_call>/g)).toHaveLength(2);
    expect(renderLeak('mistral', two)).toMatch(/^\[TOOL_CALLS\]\[\{.*\}, \{.*\}\]$/);
    expect(renderLeak('pythonic', two)).toBe(
      "[get_weather(location='Paris', days=2, metric=True), get_time(tz='UTC')]",
    );
    expect(renderLeak('bare-json', two).startsWith('[')).toBe(true);
    expect(renderLeak('kimi-k2', two)).toContain('functions.get_time:1');
    expect(renderLeak('gpt-oss', two)).toContain(
      '<|call|><|start|>assistant<|channel|>commentary to=functions.get_time',
    );
  });

  it('keeps JSON-valued parameters parseable inside markup', () => {
    const text = renderLeak('hermes', [{ name: 'f', arguments: { q: 'a "quoted" {brace} [x]', n: null } }]);
    const inner = text.replace('<tool_call>\n', '').replace('\n</tool_call>', '');
    expect(JSON.parse(inner)).toEqual({ name: 'f', arguments: { q: 'a "quoted" {brace} [x]', n: null } });
  });
});
