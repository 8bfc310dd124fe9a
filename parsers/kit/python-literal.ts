/**
 * A small recursive-descent reader for Python literals and keyword-argument calls, as the
 * pythonic format writes them: [get_weather(city="Paris", days=3), now()].
 * Depth is capped so hostile nesting cannot blow the stack.
 */
import { isWs } from './json-scan.js';
import { createArgs } from './lenient-json.js';

const MAX_DEPTH = 64;

export interface PyCall {
  name: string;
  arguments: Record<string, unknown>;
}

class PyReader {
  i = 0;
  /**
   * `joinStrings`: whether `"a" "b"` reads as Python's implicit concatenation `"ab"`: only in the
   * arguments of a pythonic call list (parsePythonCallList), and only with a blank between the two
   * strings. `tripleQuotes`: whether `"""…"""` / `'''…'''` is one string: only where the
   * syntax is Python's (a Python-style call's arguments). In a JSON object, a dict or a list three
   * quotes in a row are the touching quotes of recall21, quotes the model left unescaped
   * (`""""""` is not `''` there), so they are no value.
   */
  constructor(
    readonly s: string,
    readonly joinStrings = false,
    readonly tripleQuotes = joinStrings,
  ) {}

  ws(): void {
    while (this.i < this.s.length && isWs(this.s.charCodeAt(this.i))) this.i++;
  }

  peek(): string {
    this.ws();
    return this.s[this.i] ?? '';
  }

  /** The rest of a set literal after its first element(s): `, b, c}`. */
  setRest(items: unknown[], depth: number): unknown[] {
    for (;;) {
      if (this.eat('}')) return items;
      if (!this.eat(',')) throw new Error('expected ,');
      if (this.eat('}')) return items;
      items.push(this.value(depth + 1));
    }
  }

  eat(ch: string): boolean {
    this.ws();
    if (this.s[this.i] === ch) {
      this.i++;
      return true;
    }
    return false;
  }

  ident(): string {
    this.ws();
    const start = this.i;
    while (this.i < this.s.length && /[A-Za-z0-9_.-]/.test(this.s[this.i] ?? '')) this.i++;
    const id = this.s.slice(start, this.i);
    return /^[A-Za-z_]/.test(id) ? id : '';
  }

  string(): string {
    const q = this.s[this.i];
    if (q !== '"' && q !== "'") throw new Error('string expected');
    // triple-quoted strings, where the syntax is Python's
    const triple = this.s.startsWith(q.repeat(3), this.i);
    if (triple && !this.tripleQuotes) throw new Error('triple-quoted string');
    const close = triple ? q.repeat(3) : q;
    this.i += close.length;
    // plain runs are copied with one slice each (a long argument is not built char by char)
    let out = '';
    let run = this.i;
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === q && this.s.startsWith(close, this.i)) {
        out += this.s.slice(run, this.i);
        this.i += close.length;
        return out;
      }
      if (c === '\\') {
        out += this.s.slice(run, this.i);
        const n = this.s[this.i + 1] ?? '';
        this.i += 2;
        if (n === 'n') out += '\n';
        else if (n === 't') out += '\t';
        else if (n === 'r') out += '\r';
        else if (n === '0') out += '\0';
        else if (n === 'b') out += '\b';
        else if (n === 'f') out += '\f';
        else if (n === 'u' || n === 'x') {
          const len = n === 'u' ? 4 : 2;
          const hex = this.s.slice(this.i, this.i + len);
          if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== len) throw new Error('bad escape');
          out += String.fromCharCode(Number.parseInt(hex, 16));
          this.i += len;
        } else if (n === '\n') {
          // line continuation
        } else if (n === '\\' || n === '"' || n === "'" || n === '/') out += n;
        // Any other escape (`\U`, `\d`, `\$`) means the model wrote raw backslashes, as in a
        // Windows path `C:\Users\me\docs`: dropping them read `C:Usersmedocs`, and keeping
        // them is no better a guess, since the same string's `\n` may be a path's `\new`.
        else throw new Error('bad escape');
        run = this.i;
        continue;
      }
      // a raw newline in a one-line string is invalid Python, but models write multi-line shell
      // commands that way: the string still ends at its closing quote
      this.i++;
    }
    throw new Error('unterminated string');
  }

  value(depth: number): unknown {
    if (depth > MAX_DEPTH) throw new Error('too deep');
    this.ws();
    const c = this.s[this.i];
    if (c === '"' || c === "'") {
      let out = this.string();
      for (;;) {
        // a quote right after a string's close (`"He said "" hi"`, `"a""b"`) is the mark of
        // quotes the model left unescaped: joining the pieces would drop them (recall21)
        const touching = this.s[this.i] === '"' || this.s[this.i] === "'";
        this.ws();
        const n = this.s[this.i];
        if (n !== '"' && n !== "'") return out;
        // Python's implicit concatenation, `"a" "b"`: read only in a pythonic call's arguments;
        // in JSON or a dict it is no value (a missing comma, or quotes left unescaped, look the same)
        if (touching || !this.joinStrings) throw new Error('adjacent strings');
        out += this.string();
      }
    }
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      this.i++;
      const arr: unknown[] = [];
      if (this.eat(close)) return arr;
      for (;;) {
        arr.push(this.value(depth + 1));
        if (this.eat(close)) return arr;
        if (!this.eat(',')) throw new Error('expected ,');
        if (this.eat(close)) return arr;
      }
    }
    if (c === '{') {
      this.i++;
      const obj = createArgs();
      if (this.eat('}')) return obj;
      for (;;) {
        const k = this.value(depth + 1);
        // `{'a', 'b'}` is a set: JSON has none, so it reads as a list (as vLLM's LFM2 parser does)
        if (Object.keys(obj).length === 0 && (this.peek() === ',' || this.peek() === '}')) {
          return this.setRest([k], depth);
        }
        if (typeof k !== 'string' && typeof k !== 'number') throw new Error('bad key');
        if (!this.eat(':')) throw new Error('expected :');
        obj[String(k)] = this.value(depth + 1);
        if (this.eat('}')) return obj;
        if (!this.eat(',')) throw new Error('expected ,');
        if (this.eat('}')) return obj;
      }
    }
    const m = /^-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)/.exec(this.s.slice(this.i, this.i + 64));
    if (m) {
      this.i += m[0].length;
      return Number(m[0]);
    }
    const word = this.ident();
    if (word === 'True' || word === 'true') return true;
    if (word === 'False' || word === 'false') return false;
    if (word === 'None' || word === 'null') return null;
    throw new Error('unexpected token');
  }

  /**
   * The only argument of the last call of the list, a string broken by unescaped quotes of its
   * own kind (LFM2 writing a shell command: `bash(command='sed -n '360,450p' f.py')`, vLLM
   * test_lfm2_tool_parser.py nested_quote): read to the last such quote before `)]` ends the
   * list, when nothing in it looks like a second argument (`', key=`). Else null.
   */
  private soleBrokenString(at: number): string | null {
    this.i = at;
    this.ws();
    const q = this.s[this.i];
    if (q !== '"' && q !== "'") return null;
    const end = this.s.lastIndexOf(`${q})`);
    if (end <= this.i || !/^\s*\]\s*$/.test(this.s.slice(end + 2))) return null;
    const value = this.s.slice(this.i + 1, end);
    if (new RegExp(`${q}\\s*,\\s*[A-Za-z_]\\w*\\s*=`).test(value) || value.includes('\\')) return null;
    this.i = end + 2;
    return value;
  }

  call(): PyCall {
    const name = this.ident();
    if (!name) throw new Error('name expected');
    if (!this.eat('(')) throw new Error('( expected');
    const args = createArgs();
    if (this.eat(')')) return { name, arguments: args };
    for (;;) {
      const key = this.ident();
      if (!key || !this.eat('=')) throw new Error('keyword argument expected');
      const at = this.i;
      const first = Object.keys(args).length === 0;
      try {
        args[key] = this.value(1);
        if (this.peek() !== ')' && this.peek() !== ',') throw new Error(', expected');
      } catch (e) {
        const sole = first ? this.soleBrokenString(at) : null;
        if (sole === null) throw e;
        args[key] = sole;
        return { name, arguments: args };
      }
      if (this.eat(')')) return { name, arguments: args };
      if (!this.eat(',')) throw new Error(', expected');
      if (this.eat(')')) return { name, arguments: args };
    }
  }
}

/** Parses a whole `[f(a=1), g()]` list (surrounding whitespace allowed); null if it is not exactly that. */
export function parsePythonCallList(text: string): PyCall[] | null {
  const r = new PyReader(text, true);
  try {
    if (!r.eat('[')) return null;
    const calls: PyCall[] = [];
    if (!r.eat(']')) {
      for (;;) {
        calls.push(r.call());
        if (r.eat(']')) break;
        if (!r.eat(',')) return null;
      }
    }
    r.ws();
    return r.i === text.length && calls.length > 0 ? calls : null;
  } catch {
    return null;
  }
}

/**
 * Parses one Python literal (dict, list, string, number, True/False/None) filling the whole text.
 * `tripleQuotes`: the text is a Python-style call's argument, where `"""…"""` is one string.
 */
export function parsePythonLiteral(
  text: string,
  tripleQuotes = false,
): { ok: true; value: unknown } | { ok: false } {
  const r = new PyReader(text, false, tripleQuotes);
  try {
    const value = r.value(0);
    r.ws();
    return r.i === text.length ? { ok: true, value } : { ok: false };
  } catch {
    return { ok: false };
  }
}
