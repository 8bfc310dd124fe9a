/**
 * parseJsonBody must be JSON.parse(body.toString('utf8')) exactly: the same value for valid
 * bodies, the same exception message for invalid ones, whatever the body holds (the pieces are
 * an optimization for big bodies, never a second grammar).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseInPieces, parseJsonBody } from '../../protocol/json-body.js';

type Outcome = { ok: true; value: unknown } | { ok: false; message: string };

function outcome(f: () => unknown): Outcome {
  try {
    return { ok: true, value: f() };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

function expectSameAsJsonParse(body: Buffer): void {
  expect(outcome(() => parseJsonBody(body))).toEqual(outcome(() => JSON.parse(body.toString('utf8'))));
}

/** A chat history of about `bytes` (the bench's shape: ~400-character messages, alternating roles). */
function history(
  bytes: number,
  content: (i: number) => unknown = (i) => `(${i}) ${'some context about the project, '.repeat(12)}`,
) {
  const messages: { role: string; content: unknown }[] = [{ role: 'system', content: 'You are helpful.' }];
  for (let i = 0, size = 0; size < bytes; i++) {
    const m = { role: i % 2 === 0 ? 'user' : 'assistant', content: content(i) };
    messages.push(m);
    size += JSON.stringify(m).length + 1;
  }
  return { model: 'm', messages, max_tokens: 256 };
}

const compact = (v: unknown) => Buffer.from(JSON.stringify(v));
/** Python's json.dumps default: `", "` and `": "` separators. */
const spaced = (v: unknown) =>
  Buffer.from(
    JSON.stringify(v).replaceAll('},{"', '}, {"').replaceAll('","', '", "').replaceAll('":"', '": "'),
  );

describe('parseJsonBody', () => {
  it('parses a 200 KB history in pieces, to the same value as JSON.parse', () => {
    const body = compact(history(200 * 1024));
    const pieces = parseInPieces(body);
    expect(pieces).toBeDefined();
    expect(pieces).toEqual(JSON.parse(body.toString()));
    expect(parseJsonBody(body)).toEqual(JSON.parse(body.toString()));
  });

  it('cuts python-style bodies (", " separators) too', () => {
    const body = spaced(history(300 * 1024));
    expect(body.includes('}, {"role": "user"')).toBe(true);
    expect(parseInPieces(body)).toEqual(JSON.parse(body.toString()));
  });

  it('keeps multi-byte text and invalid UTF-8 exactly as a whole decode does', () => {
    const value = history(200 * 1024, (i) => `${'héllo wörld 你好 🎉 '.repeat(20)}${i}`);
    const body = compact(value);
    expect(parseInPieces(body)).toEqual(JSON.parse(body.toString()));
    // A lone continuation byte and a truncated sequence inside strings become U+FFFD either way.
    const raw = Buffer.from(body);
    const at = raw.indexOf('héllo', 150_000);
    raw[at + 1] = 0x80;
    raw[at + 2] = 0xe4;
    expectSameAsJsonParse(raw);
    expect(parseInPieces(raw)).toEqual(JSON.parse(raw.toString()));
  });

  it("gives JSON.parse's own error for invalid big bodies", () => {
    const good = compact(history(200 * 1024)).toString();
    const mid = good.indexOf('},{"role"', 100_000) + 1;
    const end = good.lastIndexOf('},{"role"') + 9;
    const cases = [
      good.slice(0, -1), // truncated
      good.replace('},{"role"', '},,{"role"'), // empty element at the first cut
      `${good.slice(0, end)},${good.slice(end)}`, // broken last message: {"role",:"user"...
      `${good.slice(0, mid)}]${good.slice(mid)}`, // stray bracket between two middle messages
      good.replace('"max_tokens":256', '"max_tokens":'),
      `\ufeff${good}`, // a byte order mark is not whitespace
      good.replace('(300)', '(300)\u0001'), // raw control character in a string
    ];
    for (const text of cases) {
      const body = Buffer.from(text);
      expect(() => JSON.parse(body.toString())).toThrow();
      expectSameAsJsonParse(body);
    }
  });

  it('is not fooled by separators that are not between top-level messages', () => {
    // Messages whose content is a list of objects that start with "role": the first `},{"role"`
    // is inside the first message.
    const nested = history(200 * 1024, (i) => [
      { role: 'x', text: `a${i}` },
      { role: 'y', text: `b${i}` },
    ]);
    expectSameAsJsonParse(compact(nested));
    // The separator text inside strings, escaped or not.
    const inStrings = history(200 * 1024, (i) => `look: },{"role" and }, {"role": ${i} },{\\"role\\"`);
    expectSameAsJsonParse(compact(inStrings));
    // The client's own copy of the sentinel (U+0000 inside) as the first and the last element.
    const withNul = history(200 * 1024);
    withNul.messages.unshift('\u0000toolproof-split\u0000' as never);
    withNul.messages.push('\u0000toolproof-split\u0000' as never);
    expectSameAsJsonParse(compact(withNul));
    expectSameAsJsonParse(compact(history(200 * 1024, (i) => `m${i}\u0000`)));
    // Two "messages" keys: the last one wins, as in JSON.parse.
    const big = compact(history(200 * 1024)).toString();
    expectSameAsJsonParse(Buffer.from(`${big.slice(0, -1)},"messages":[{"role":"user","content":"x"}]}`));
    const dup = `{"messages":[{"role":"user","content":"y"}],${big.slice(1)}`;
    expectSameAsJsonParse(Buffer.from(dup));
    expect(parseInPieces(Buffer.from(dup))).toBeDefined();
    // A top-level array, "__proto__" as the key, the history under another key.
    expectSameAsJsonParse(Buffer.from(`[${big}]`));
    expectSameAsJsonParse(Buffer.from(big.replace('"messages"', '"__proto__"')));
    expectSameAsJsonParse(Buffer.from(big.replace('"messages"', '"input"')));
  });

  it('one message longer than a piece', () => {
    const value = history(200 * 1024);
    value.messages[40]!.content = 'z'.repeat(150_000);
    const body = compact(value);
    expect(parseInPieces(body)).toEqual(JSON.parse(body.toString()));
  });

  it('matches JSON.parse on random big bodies, intact and damaged (property)', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    const message = fc.record({
      role: fc.constantFrom('user', 'assistant', 'tool', 'system'),
      content: fc.oneof(
        text,
        fc.constant('},{"role"'),
        fc.array(fc.record({ role: text, t: text }), { maxLength: 2 }),
      ),
    });
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 30 }),
        fc.boolean(),
        fc.option(fc.tuple(fc.nat(), fc.constantFrom('', ',', '}', '"', '{', ']', '\\', '\u00e9'))),
        (sample, python, damage) => {
          // Repeat the sample up to > 64 KB, so that the pieces are used.
          const messages = [];
          let size = 0;
          for (let i = 0; size < 80 * 1024; i++) {
            const m = sample[i % sample.length]!;
            messages.push(m);
            size += JSON.stringify(m).length + 200;
            messages.push({ role: 'user', content: 'p'.repeat(200) });
          }
          let body = (python ? spaced : compact)({ model: 'm', messages });
          if (damage) {
            const [at, insert] = damage;
            const i = at % body.length;
            body = Buffer.concat([
              body.subarray(0, i),
              Buffer.from(insert),
              body.subarray(i + (insert === '' ? 1 : 0)),
            ]);
          }
          expectSameAsJsonParse(body);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('leaves the body bytes as they were (they are forwarded upstream)', () => {
    const good = compact(history(200 * 1024));
    const bad = Buffer.from(good.toString().replace('(300)', '(300)\u0001'));
    for (const body of [good, bad]) {
      const before = Buffer.from(body);
      outcome(() => parseJsonBody(body));
      expect(body.equals(before)).toBe(true);
    }
  });

  it('small bodies are parsed whole', () => {
    expect(parseInPieces(compact(history(10 * 1024)))).toBeUndefined();
    expectSameAsJsonParse(Buffer.from('{"a":1}'));
    expectSameAsJsonParse(Buffer.from('{"a":'));
  });
});
