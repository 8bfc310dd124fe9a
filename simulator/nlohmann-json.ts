/**
 * JSON parsing that fails with the messages of nlohmann::json (the C++ library inside
 * llama-server), e.g. "[json.exception.parse_error.101] parse error at line 1, column 65:
 * syntax error while parsing array - unexpected end of input; expected ']'". Clients and
 * proxies match on these texts, so the simulator reproduces the common cases.
 */

export type NlohmannResult = { ok: true; value: unknown } | { ok: false; message: string };

type Tok =
  | 'begin_array'
  | 'begin_object'
  | 'end_array'
  | 'end_object'
  | 'name_separator'
  | 'value_separator'
  | 'value_string'
  | 'value_number'
  | 'literal_true'
  | 'literal_false'
  | 'literal_null'
  | 'end_of_input'
  | 'parse_error';

const TOKEN_NAME: Record<Tok | 'literal_or_value', string> = {
  begin_array: "'['",
  begin_object: "'{'",
  end_array: "']'",
  end_object: "'}'",
  name_separator: "':'",
  value_separator: "','",
  value_string: 'string literal',
  value_number: 'number literal',
  literal_true: "'true'",
  literal_false: "'false'",
  literal_null: "'null'",
  end_of_input: 'end of input',
  parse_error: '<parse error>',
  literal_or_value: "'[', '{', or a literal",
};

class SyntaxFailure extends Error {}

class Scanner {
  pos = 0;
  /** Characters read so far; reading the end of input counts as one, as in nlohmann. */
  readCount = 0;
  tokenStart = 0;
  lexError = '';
  constructor(readonly text: string) {}

  scan(): Tok {
    const t = this.text;
    while (this.pos < t.length && ' \t\n\r'.includes(t[this.pos] as string)) this.pos++;
    if (this.pos >= t.length) {
      this.readCount = t.length + 1;
      return 'end_of_input';
    }
    const ch = t[this.pos] as string;
    const simple: Record<string, Tok> = {
      '[': 'begin_array',
      ']': 'end_array',
      '{': 'begin_object',
      '}': 'end_object',
      ':': 'name_separator',
      ',': 'value_separator',
    };
    const s = simple[ch];
    if (s) {
      this.pos++;
      this.readCount = this.pos;
      return s;
    }
    if (ch === 't' || ch === 'f' || ch === 'n')
      return this.literal(ch === 't' ? 'true' : ch === 'f' ? 'false' : 'null');
    if (ch === '"') return this.string();
    if (ch === '-' || (ch >= '0' && ch <= '9')) return this.number();
    this.pos++;
    this.readCount = this.pos;
    this.lexError = 'invalid literal';
    return 'parse_error';
  }

  private literal(word: string): Tok {
    for (let i = 0; i < word.length; i++) {
      if (this.text[this.pos + i] !== word[i]) {
        const failAt = Math.min(this.pos + i, this.text.length);
        this.readCount = failAt + 1;
        this.pos = failAt + 1;
        this.lexError = 'invalid literal';
        return 'parse_error';
      }
    }
    this.pos += word.length;
    this.readCount = this.pos;
    return word === 'true' ? 'literal_true' : word === 'false' ? 'literal_false' : 'literal_null';
  }

  private string(): Tok {
    this.tokenStart = this.pos;
    let i = this.pos + 1;
    while (i < this.text.length) {
      const c = this.text[i] as string;
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '"') {
        this.pos = i + 1;
        this.readCount = this.pos;
        return 'value_string';
      }
      if (c.charCodeAt(0) < 0x20) {
        const hex = c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
        this.pos = i + 1;
        this.readCount = this.pos;
        this.lexError = `invalid string: control character U+${hex} must be escaped to \\u${hex}`;
        return 'parse_error';
      }
      i++;
    }
    this.pos = this.text.length;
    this.readCount = this.text.length + 1;
    this.lexError = 'invalid string: missing closing quote';
    return 'parse_error';
  }

  private number(): Tok {
    this.tokenStart = this.pos;
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.pos));
    if (!m) {
      this.pos += 2;
      this.readCount = Math.min(this.pos, this.text.length + 1);
      this.lexError = "invalid number; expected digit after '-'";
      return 'parse_error';
    }
    this.pos += m[0].length;
    this.readCount = this.pos;
    return 'value_number';
  }

  lastRead(): string {
    return this.text.slice(this.tokenStart, Math.min(this.pos, this.text.length));
  }

  position(): string {
    const consumed = this.text.slice(0, Math.min(this.readCount, this.text.length));
    const lines = consumed.split('\n');
    const line = lines.length;
    const lineStart = consumed.length - (lines[lines.length - 1] as string).length;
    return `line ${line}, column ${this.readCount - lineStart}`;
  }
}

function fail(sc: Scanner, last: Tok, context: string, expected: Tok | 'literal_or_value'): never {
  const what =
    last === 'parse_error'
      ? `${sc.lexError}; last read: '${sc.lastRead()}'`
      : `unexpected ${TOKEN_NAME[last]}`;
  throw new SyntaxFailure(
    `[json.exception.parse_error.101] parse error at ${sc.position()}: syntax error while parsing ${context} - ${what}; expected ${TOKEN_NAME[expected]}`,
  );
}

function parseValue(sc: Scanner, tok: Tok): void {
  if (tok === 'begin_object') {
    let t = sc.scan();
    if (t === 'end_object') return;
    for (;;) {
      if (t !== 'value_string') fail(sc, t, 'object key', 'value_string');
      t = sc.scan();
      if (t !== 'name_separator') fail(sc, t, 'object separator', 'name_separator');
      parseValue(sc, sc.scan());
      t = sc.scan();
      if (t === 'value_separator') {
        t = sc.scan();
        continue;
      }
      if (t === 'end_object') return;
      fail(sc, t, 'object', 'end_object');
    }
  }
  if (tok === 'begin_array') {
    let t = sc.scan();
    if (t === 'end_array') return;
    for (;;) {
      parseValue(sc, t);
      t = sc.scan();
      if (t === 'value_separator') {
        t = sc.scan();
        continue;
      }
      if (t === 'end_array') return;
      fail(sc, t, 'array', 'end_array');
    }
  }
  if (
    tok === 'value_string' ||
    tok === 'value_number' ||
    tok === 'literal_true' ||
    tok === 'literal_false' ||
    tok === 'literal_null'
  )
    return;
  fail(sc, tok, 'value', 'literal_or_value');
}

export function parseLikeNlohmann(text: string): NlohmannResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    // fall through to the diagnostic scan below
  }
  if (text.length === 0) {
    return {
      ok: false,
      message:
        '[json.exception.parse_error.101] parse error at line 1, column 1: attempting to parse an empty input; check that your input string or stream contains the expected JSON',
    };
  }
  const sc = new Scanner(text);
  try {
    parseValue(sc, sc.scan());
    const t = sc.scan();
    if (t !== 'end_of_input') fail(sc, t, 'value', 'end_of_input');
  } catch (err) {
    if (err instanceof SyntaxFailure) return { ok: false, message: err.message };
    throw err;
  }
  // JSON.parse rejected something nlohmann's grammar accepts (e.g. a lone surrogate escape).
  return { ok: false, message: '[json.exception.parse_error.101] parse error: invalid JSON' };
}
