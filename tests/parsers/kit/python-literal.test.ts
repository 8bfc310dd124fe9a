import { describe, expect, it } from 'vitest';
import { parsePythonCallList, parsePythonLiteral } from '../../../parsers/kit/python-literal.js';

describe('parsePythonCallList', () => {
  it('reads keyword calls with nested literals', () => {
    expect(parsePythonCallList(" [f(a=1, b='x', c=[1, (2, 3)], d={'k': None}, e=True), g()] ")).toEqual([
      { name: 'f', arguments: { a: 1, b: 'x', c: [1, [2, 3]], d: { k: null }, e: true } },
      { name: 'g', arguments: {} },
    ]);
  });
  it('handles escapes, unicode, negative and float numbers', () => {
    expect(parsePythonCallList('[f(s="a\\"b\\n\\u00e9", n=-2.5e1)]')).toEqual([
      { name: 'f', arguments: { s: 'a"b\né', n: -25 } },
    ]);
  });
  it('refuses positional arguments, trailing text, empty lists', () => {
    expect(parsePythonCallList('[f(1)]')).toBeNull();
    expect(parsePythonCallList('[f()] and more')).toBeNull();
    expect(parsePythonCallList('[]')).toBeNull();
    expect(parsePythonCallList('[1, 2]')).toBeNull();
  });
  it('refuses an escape Python and JSON do not share (raw backslashes in a Windows path)', () => {
    // dropping the backslash read `C:Usersmedocs`; keeping it is no safer (a path's `\new` would be a newline)
    expect(parsePythonCallList('[f(path="C:\\Users\\me\\docs")]')).toBeNull();
    expect(parsePythonCallList('[f(c="echo \\$HOME")]')).toBeNull();
    expect(parsePythonCallList('[f(s="\\\\ \\/ \\b\\f \\\' \\"")]')).toEqual([
      { name: 'f', arguments: { s: '\\ / \b\f \' "' } },
    ]);
  });
  it('does not blow the stack on hostile nesting', () => {
    expect(parsePythonCallList(`[f(a=${'['.repeat(100000)})]`)).toBeNull();
  });
});

describe('parsePythonLiteral', () => {
  it('reads one literal filling the text', () => {
    expect(parsePythonLiteral("{'a': [True, False, None]}")).toEqual({
      ok: true,
      value: { a: [true, false, null] },
    });
    expect(parsePythonLiteral('1 2')).toEqual({ ok: false });
  });
});

describe('parsePythonCallList: a sole string argument broken by its own quotes (issue 21)', () => {
  it('reads it to the last quote before the list ends (LFM2 shell commands)', () => {
    expect(parsePythonCallList("[bash(command='sed -n '360,450p' /testbed/a.py')]")).toEqual([
      { name: 'bash', arguments: { command: "sed -n '360,450p' /testbed/a.py" } },
    ]);
    expect(parsePythonCallList('[run(cmd="echo "hi" && ls")]')).toEqual([
      { name: 'run', arguments: { cmd: 'echo "hi" && ls' } },
    ]);
  });
  it('not when it could be two arguments, is not the last call, or holds an escape', () => {
    expect(parsePythonCallList("[f(a='x', b='y 'z'')]")).toBeNull();
    expect(parsePythonCallList("[f(a='x' 'y' z'), g()]")).toBeNull();
    expect(parsePythonCallList("[f(a='it's \\' here')]")).toBeNull();
  });
});
