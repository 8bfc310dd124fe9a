/**
 * Issue 8 (A3): a parameter named `__proto__` (or `constructor`, `prototype`) in a recovered
 * call was silently dropped by parsers that built arguments on `{}` (the assignment hits the
 * prototype setter), and `required` then looked satisfied through the prototype. Arguments are
 * now built without a prototype, so the canonical JSON carries the key as data.
 */
import { describe, expect, it } from 'vitest';
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import { chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const tools = toolsOf(
  { name: 'set_field', parameters: { type: 'object', properties: {}, required: ['__proto__'] } },
  { name: 'f' },
);
const opts = () => options(tools);

// `{ ['__proto__']: v }` (computed key) defines an own property; `{ __proto__: v }` would not
const cases: Array<[string, string, Record<string, unknown>]> = [
  [
    'qwen3-coder XML parameter',
    '<tool_call>\n<function=set_field>\n<parameter=__proto__>\npolluted\n</parameter>\n<parameter=constructor>\nx\n</parameter>\n</function>\n</tool_call>',
    { ['__proto__']: 'polluted', constructor: 'x' },
  ],
  [
    'qwen3-coder XML parameter holding an object',
    '<tool_call>\n<function=set_field>\n<parameter=__proto__>\n{"isAdmin": true}\n</parameter>\n</function>\n</tool_call>',
    { ['__proto__']: '{"isAdmin": true}' },
  ],
  [
    'GLM arg_key',
    '<tool_call>set_field\n<arg_key>__proto__</arg_key>\n<arg_value>{"isAdmin": true}</arg_value>\n<arg_key>prototype</arg_key>\n<arg_value>p</arg_value>\n</tool_call>',
    { ['__proto__']: { isAdmin: true }, prototype: 'p' },
  ],
  [
    'pythonic kwargs',
    '[set_field(__proto__="polluted", constructor="c")]',
    { ['__proto__']: 'polluted', constructor: 'c' },
  ],
  [
    'pythonic dict value with a __proto__ key',
    "[f(x={'__proto__': {'isAdmin': True}})]",
    { x: { ['__proto__']: { isAdmin: true } } },
  ],
  [
    'hermes JSON (JSON.parse already keeps it: guard against regressions)',
    '<tool_call>{"name": "set_field", "arguments": {"__proto__": {"isAdmin": true}}}</tool_call>',
    { ['__proto__']: { isAdmin: true } },
  ],
];

describe('prototype-named parameters are kept as data', () => {
  for (const [name, text, expected] of cases) {
    it(name, () => {
      const r = whole(text, opts());
      expect(r.calls).toHaveLength(1);
      const args = r.calls[0]!.arguments;
      const parsed = JSON.parse(args) as Record<string, unknown>;
      expect(Object.keys(parsed).sort()).toEqual(Object.keys(expected).sort());
      expect(JSON.stringify(parsed)).toBe(JSON.stringify(expected));
      expect(view(streamed(chunks(text, 3), opts()))).toEqual(view(r));
    });
  }

  it('the JSON keys are own data keys, the prototype is untouched', () => {
    const r = whole(cases[1]![1], opts());
    const parsed = JSON.parse(r.calls[0]!.arguments) as Record<string, unknown>;
    expect(Object.hasOwn(parsed, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['isAdmin']).toBeUndefined();
  });
});

describe('required is not satisfied through the prototype', () => {
  it('a missing `constructor` / `__proto__` / `toString` is reported missing', () => {
    const schema = { type: 'object', required: ['constructor', '__proto__', 'toString'] };
    const v = validateArguments(schema, JSON.parse('{}'));
    expect(v.valid).toBe(false);
    expect(v.issues.map((i) => i.keyword)).toEqual(['required', 'required', 'required']);
  });

  it('a present `__proto__` key satisfies it', () => {
    const v = validateArguments({ type: 'object', required: ['__proto__'] }, JSON.parse('{"__proto__": 1}'));
    expect(v.valid).toBe(true);
  });
});
