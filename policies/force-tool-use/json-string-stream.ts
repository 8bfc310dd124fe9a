/**
 * Incremental decoder for ONE string field of a streamed JSON object, e.g. the `answer` of a
 * final_answer call whose arguments arrive in arbitrary fragments. One pass, a small carry
 * (an unfinished escape, a held high surrogate), no re-parsing.
 *
 * Hazards handled: escapes and `\uXXXX` split across fragments; surrogate pairs given as two
 * escapes or as raw UTF-16 split between fragments (a trailing high surrogate is held until its
 * pair arrives, so no fragment ever ends in half a character); keys in any order, escaped keys,
 * whitespace anywhere JSON allows it; other fields of any shape are skipped.
 *
 * Lenient where models are sloppy: raw control characters inside strings are kept, an unknown
 * escape `\x` yields `x`. Duplicate keys: the first occurrence wins (JSON.parse keeps the last;
 * models do not repeat `answer`). Non-streamed callers decode with the same object, so streamed
 * and non-streamed text are equal by construction.
 */
import { SIMPLE_ESCAPES } from '../../parsers/kit/lenient-json.js';

type Mode =
  | 'start'
  | 'key-or-end'
  | 'key'
  | 'colon'
  | 'value'
  | 'target'
  | 'skip-string'
  | 'skip-nested'
  | 'skip-scalar'
  | 'after-value'
  | 'done'
  | 'invalid';

const HEX4 = /^[0-9a-fA-F]{4}$/;

export interface JsonFieldState {
  /** The field's value started and is a string. */
  found: boolean;
  /** The field's string value is closed. */
  valueComplete: boolean;
  /** The whole object is closed. */
  objectComplete: boolean;
  /** The text is not a JSON object (structure error). */
  invalid: boolean;
  /** The field is present but its value is not a string. */
  nonString: boolean;
  /** Some other key was seen. */
  otherKeys: boolean;
  /** Keys whose value has started so far. */
  keys: number;
  /**
   * With `firstStringKey`: the key whose string value is being decoded when it is not the
   * field itself (e.g. "response" in `{"response": "..."}`); undefined otherwise.
   */
  alias: string | undefined;
}

export interface DecoderOptions {
  /**
   * Also take the FIRST key's value when it is a string, whatever the key is called, and decode
   * it live from its first character. A later occurrence of the field is then ignored (first
   * wins, as for duplicate keys), so the text emitted so far never has to be taken back.
   */
  firstStringKey?: boolean;
}

export class JsonStringFieldDecoder {
  private mode: Mode = 'start';
  private escape: '' | 'backslash' | 'unicode' = '';
  private hex = '';
  private key = '';
  private depth = 0;
  private nestedInString = false;
  private nestedEscape = false;
  /** A high surrogate waiting for its low half. */
  private held = '';
  private readonly st: JsonFieldState = {
    found: false,
    valueComplete: false,
    objectComplete: false,
    invalid: false,
    nonString: false,
    otherKeys: false,
    keys: 0,
    alias: undefined,
  };

  constructor(
    private readonly field: string,
    private readonly opts: DecoderOptions = {},
  ) {}

  get state(): Readonly<JsonFieldState> {
    return this.st;
  }

  /** Feeds one fragment; returns the newly decoded text of the field (possibly ''). */
  push(fragment: string): string {
    let out = this.held;
    this.held = '';
    const n = fragment.length;
    let i = 0;
    while (i < n) {
      if (this.mode === 'target' && this.escape === '') {
        // Inside the field's string, every character up to the next quote or backslash is
        // itself (stringChar): the run is taken as one slice, not a string per character. A
        // fragment that is all plain text (most of them) comes out as the very string.
        let j = i;
        while (j < n) {
          const c = fragment.charCodeAt(j);
          if (c === 34 || c === 92) break;
          j++;
        }
        if (j > i) {
          out += i === 0 && j === n ? fragment : fragment.slice(i, j);
          i = j;
          continue;
        }
      }
      out += this.step(fragment[i]!);
      i++;
    }
    if (this.mode === 'target' && out.length > 0) {
      const last = out.charCodeAt(out.length - 1);
      if (last >= 0xd800 && last <= 0xdbff) {
        this.held = out.slice(-1);
        out = out.slice(0, -1);
      }
    }
    return out;
  }

  /** End of input: the field's text still held back (a lone high surrogate of a cut string is dropped). */
  finish(): string {
    const held = this.held;
    this.held = '';
    return this.mode === 'target' ? '' : held;
  }

  /** One character of a JSON string body: the decoded text, or null when the string closed. */
  private stringChar(ch: string): string | null {
    if (this.escape === 'unicode') {
      this.hex += ch;
      if (this.hex.length < 4) return '';
      const hex = this.hex;
      this.escape = '';
      this.hex = '';
      return HEX4.test(hex) ? String.fromCharCode(Number.parseInt(hex, 16)) : `u${hex}`;
    }
    if (this.escape === 'backslash') {
      this.escape = '';
      if (ch === 'u') {
        this.escape = 'unicode';
        return '';
      }
      return SIMPLE_ESCAPES[ch] ?? ch;
    }
    if (ch === '\\') {
      this.escape = 'backslash';
      return '';
    }
    if (ch === '"') return null;
    return ch;
  }

  private step(ch: string): string {
    const ws = ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t';
    switch (this.mode) {
      case 'start':
        if (ch === '{') this.mode = 'key-or-end';
        else if (!ws) this.fail();
        return '';
      case 'key-or-end':
        if (ch === '"') {
          this.mode = 'key';
          this.key = '';
        } else if (ch === '}') this.close();
        else if (!ws && ch !== ',') this.fail();
        return '';
      case 'key': {
        const c = this.stringChar(ch);
        if (c === null) this.mode = 'colon';
        else this.key += c;
        return '';
      }
      case 'colon':
        if (ch === ':') this.mode = 'value';
        else if (!ws) this.fail();
        return '';
      case 'value':
        return this.startValue(ch, ws);
      case 'target': {
        const c = this.stringChar(ch);
        if (c !== null) return c;
        this.st.valueComplete = true;
        this.mode = 'after-value';
        // The string is closed: a held high surrogate was a real (lone) character.
        return '';
      }
      case 'skip-string':
        if (this.stringChar(ch) === null) this.mode = 'after-value';
        return '';
      case 'skip-nested':
        this.skipNested(ch);
        return '';
      case 'skip-scalar':
        if (ch === ',') this.mode = 'key-or-end';
        else if (ch === '}') this.close();
        else if (ws) this.mode = 'after-value';
        return '';
      case 'after-value':
        if (ch === ',') this.mode = 'key-or-end';
        else if (ch === '}') this.close();
        else if (!ws) this.fail();
        return '';
      default:
        return '';
    }
  }

  private startValue(ch: string, ws: boolean): string {
    if (ws) return '';
    this.st.keys++;
    const named = this.key === this.field;
    const isTarget = named && !this.st.found && !this.st.nonString;
    if (!named) this.st.otherKeys = true;
    if (ch === '"') {
      if (isTarget) {
        this.st.found = true;
        this.mode = 'target';
      } else if (!named && this.opts.firstStringKey === true && this.st.keys === 1) {
        this.st.found = true;
        this.st.alias = this.key;
        this.mode = 'target';
      } else this.mode = 'skip-string';
      return '';
    }
    if (isTarget) this.st.nonString = true;
    if (ch === '{' || ch === '[') {
      this.mode = 'skip-nested';
      this.depth = 1;
      this.nestedInString = false;
      this.nestedEscape = false;
    } else if (ch === '}' || ch === ',') this.fail();
    else this.mode = 'skip-scalar';
    return '';
  }

  private skipNested(ch: string): void {
    if (this.nestedInString) {
      if (this.nestedEscape) this.nestedEscape = false;
      else if (ch === '\\') this.nestedEscape = true;
      else if (ch === '"') this.nestedInString = false;
      return;
    }
    if (ch === '"') this.nestedInString = true;
    else if (ch === '{' || ch === '[') this.depth++;
    else if (ch === '}' || ch === ']') {
      this.depth--;
      if (this.depth === 0) this.mode = 'after-value';
    }
  }

  private close(): void {
    this.mode = 'done';
    this.st.objectComplete = true;
  }

  private fail(): void {
    this.mode = 'invalid';
    this.st.invalid = true;
  }
}
