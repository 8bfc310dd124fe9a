/**
 * Issue 21: the schema-guided reader of improvised calls. Each shape below is an instance of the
 * general rules (a declared name somewhere, schema-valid arguments beside it or one level down,
 * exactly one reading), not a listed key or tag: none of the key names used here were in the
 * old reader's lists, so every positive case failed before the reader.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../../hardening/loop-probe.js';
import { readImprovisedCalls } from '../../../parsers/kit/structured-reader.js';
import type { DeclaredTool } from '../../../parsers/types.js';
import { measureScaling, withinBudget } from '../../support/cost-scaling.js';

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
});
const S = { type: 'string' };
const TOOLS: DeclaredTool[] = [
  { name: 'get_weather', parameters: obj({ city: S, unit: { type: 'string', enum: ['c', 'f'] } }, ['city']) },
  { name: 'schedule', parameters: obj({ title: S, time: S, note: S }, ['title', 'time']) },
  { name: 'search', parameters: obj({ query: S }, ['query']) },
  { name: 'now', parameters: obj({}) },
];
const tools = new Map(TOOLS.map((t) => [t.name, t]));
const read = (text: string, t: ReadonlyMap<string, DeclaredTool> = tools) =>
  readImprovisedCalls(text, t)?.map((c) => [c.name, c.args]) ?? null;

describe('structured reader: where the name is', () => {
  it('as a value under any key, the arguments under any key beside it', () => {
    expect(read('{"use": "get_weather", "with": {"city": "Paris"}}')).toEqual([
      ['get_weather', { city: 'Paris' }],
    ]);
    expect(read('{"op": "search", "payload": "{\\"query\\": \\"cats\\"}"}')).toEqual([
      ['search', { query: 'cats' }],
    ]);
  });
  it('as a value, the arguments flat beside it', () => {
    expect(read('{"do": "get_weather", "city": "Paris", "unit": "c"}')).toEqual([
      ['get_weather', { city: 'Paris', unit: 'c' }],
    ]);
  });
  it('as the key itself, and one level down in a wrapper of any name', () => {
    expect(read('{"search": {"query": "cats"}}')).toEqual([['search', { query: 'cats' }]]);
    expect(read('{"step": {"get_weather": {"city": "Oslo"}}}')).toEqual([['get_weather', { city: 'Oslo' }]]);
    expect(read('{"plan": [{"tool": "now"}, {"tool": "search", "q": {"query": "x"}}]}')).toEqual([
      ['now', {}],
      ['search', { query: 'x' }],
    ]);
  });
  it('as a tag or an attribute value, arguments from attributes and children, typed by the schema', () => {
    expect(read('<call tool="get_weather"><city>Paris</city></call>')).toEqual([
      ['get_weather', { city: 'Paris' }],
    ]);
    expect(read('<step><search query="cats"/></step>')).toEqual([['search', { query: 'cats' }]]);
    expect(read('<get_weather>\n  <arg name="city">Rome</arg>\n</get_weather>')).toEqual([
      ['get_weather', { city: 'Rome' }],
    ]);
    expect(read('<search>rust lifetimes</search>')).toEqual([['search', { query: 'rust lifetimes' }]]);
  });
  it('as a function name, dotted or inside another call', () => {
    expect(read('tools.search(query="x")')).toEqual([['search', { query: 'x' }]]);
    expect(read('run(get_weather(city="Paris"))')).toEqual([['get_weather', { city: 'Paris' }]]);
  });
  it('a call serialized as a string inside a field is decoded', () => {
    expect(read('{"action": "get_weather(city=\'Paris\')"}')).toEqual([['get_weather', { city: 'Paris' }]]);
    expect(
      read('{"message": "{\\"name\\": \\"search\\", \\"arguments\\": {\\"query\\": \\"a\\"}}"}'),
    ).toEqual([['search', { query: 'a' }]]);
  });
});

describe('structured reader: positional arguments', () => {
  it('map onto the one parameter, or onto as many required parameters in declaration order', () => {
    expect(read('search("cats")')).toEqual([['search', { query: 'cats' }]]);
    expect(read('get_weather("Paris")')).toEqual([['get_weather', { city: 'Paris' }]]);
    expect(read('schedule("Standup", "10:00")')).toEqual([['schedule', { title: 'Standup', time: '10:00' }]]);
    expect(read('schedule("Standup", "10:00", note="daily")')).toEqual([
      ['schedule', { title: 'Standup', time: '10:00', note: 'daily' }],
    ]);
  });
  it('are refused when the mapping is not unambiguous', () => {
    expect(read('schedule("Standup")')).toBeNull();
    expect(read('schedule("a", "b", "c")')).toBeNull();
  });
});

describe('structured reader: the gates', () => {
  it('exactly one reading: two that fit is ambiguous, so text', () => {
    expect(read('{"a": "search", "b": "get_weather", "query": "x", "city": "y"}')).toBeNull();
    expect(read('{"x": {"query": "a"}, "y": {"query": "b"}, "tool": "search"}')).toBeNull();
  });
  it('exact declared name, schema-valid arguments', () => {
    expect(read('{"use": "get_weathers", "with": {"city": "Paris"}}')).toBeNull();
    expect(read('{"use": "get_weather", "with": {"town": "Paris"}}')).toBeNull();
    expect(read('{"use": "get_weather", "with": {"city": "Paris", "unit": "kelvin"}}')).toBeNull();
  });
  it('all or nothing over a sequence', () => {
    expect(read('{"search": {"query": "a"}} {"search": {"q": "b"}}')).toBeNull();
    expect(read('{"search": {"query": "a"}}\n{"now": {}}')).toEqual([
      ['search', { query: 'a' }],
      ['now', {}],
    ]);
  });
  it('the whole output: prose, or a call inside prose, is not a structured value', () => {
    expect(read('Sure! {"search": {"query": "a"}}')).toBeNull();
    expect(read('{"search": {"query": "a"}} hope that helps')).toBeNull();
    expect(read('search engines are fun')).toBeNull();
  });
  it('data that names no tool, or a message of another role, is not a call', () => {
    expect(read('{"name": "my-app", "version": "1.0.0"}')).toBeNull();
    expect(read('[{"name": "alice", "age": 30}]')).toBeNull();
    expect(read('{"role": "user", "content": {"search": {"query": "a"}}}')).toBeNull();
  });
  it('no tools declared: nothing is read', () => {
    expect(read('{"search": {"query": "a"}}', new Map())).toBeNull();
  });
});

describe('structured reader: bounded', () => {
  it('deep nesting and many candidates finish fast and read nothing', () => {
    const t0 = processCpuMs();
    expect(read(`${'['.repeat(50_000)}${']'.repeat(50_000)}`)).toBeNull();
    expect(read(`${'<w>'.repeat(20_000)}${'</w>'.repeat(20_000)}`)).toBeNull();
    const keys = Array.from({ length: 5000 }, (_, i) => `"k${i}": "search"`).join(', ');
    expect(read(`{${keys}, "query": "x"}`)).toBeNull();
    expect(processCpuMs() - t0).toBeLessThan(5000);
  });
});

describe('structured reader: records written in tags', () => {
  const read2 = (text: string) => readImprovisedCalls(text, tools)?.map((c) => [c.name, c.args]) ?? null;
  it('child elements spell an object, read like any other (name under a key, arguments beside it)', () => {
    expect(
      read2('<call>\n<tool_name>search</tool_name>\n<input>\n<query>cats</query>\n</input>\n</call>'),
    ).toEqual([['search', { query: 'cats' }]]);
    expect(read2('<step><do>search</do><query>dogs</query></step>')).toEqual([['search', { query: 'dogs' }]]);
  });
  it('a record naming no tool, or with arguments that do not fit, is not a call', () => {
    expect(read2('<note><title>search</title><body>later</body></note>')).toBeNull();
    expect(read2('<a><b>x</b><b>y</b></a>')).toBeNull();
  });
});

describe('structured reader: cost', () => {
  it('a positional call to a tool of n properties, all required: linear CPU in n (x1 vs x4)', () => {
    // redteam: `required` was searched once per property (n² compares: 0.27 s at 8k, 0.69 s at 16k)
    const toolsOf = (n: number): ReadonlyMap<string, DeclaredTool> => {
      const names = Array.from({ length: n }, (_, i) => `p${i}`);
      const properties = Object.fromEntries(names.map((p) => [p, S]));
      return new Map([['go', { name: 'go', parameters: obj(properties, names) }]]);
    };
    expect(read('go("a")', toolsOf(1))).toEqual([['go', { p0: 'a' }]]);
    const s = measureScaling(toolsOf, (t) => readImprovisedCalls('go("a", "b")', t), {
      from: 512,
      max: 16_384,
    });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
