/**
 * Test data for protocol/lossless-json.ts: JSON source trees whose numbers are spelled as a
 * client may spell them (big integers, 1e400, -0, 1.0, exponents) and whose keys include
 * integer-like ones in any order, printed as text exactly as given.
 */
import fc from 'fast-check';

export type Src =
  | { kind: 'num'; text: string }
  | { kind: 'str'; value: string }
  | { kind: 'lit'; text: 'true' | 'false' | 'null' }
  | { kind: 'arr'; items: Src[] }
  | { kind: 'obj'; entries: Array<[string, Src]> };

export const numberText = fc.oneof(
  fc.constantFrom(
    '12345678901234567890',
    '-9007199254740993',
    '98765432109876543210123',
    '1e400',
    '-1e400',
    '1e-400',
    '-0',
    '-0.0',
    '1.0',
    '2.50',
    '1E5',
    '1e+21',
    '1.5e300',
    '0.1',
    '123',
    '0',
  ),
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
);

export const key = fc
  .oneof(
    fc.string({ maxLength: 6 }),
    fc.nat(30).map(String),
    fc.constantFrom('__proto__', '01', '4294967294', '4294967295', 'a"b', 'é\\'),
  )
  .filter((k) => k !== 'toJSON');

const text = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('"', '\\', '\u0000', 'é', '\ud800', '1.0'),
);

export const src: fc.Arbitrary<Src> = fc.letrec<{ node: Src }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText.map((t): Src => ({ kind: 'num', text: t })),
    text.map((value): Src => ({ kind: 'str', value })),
    fc.constantFrom<Src>(
      { kind: 'lit', text: 'true' },
      { kind: 'lit', text: 'false' },
      { kind: 'lit', text: 'null' },
    ),
    fc.array(tie('node'), { maxLength: 4 }).map((items): Src => ({ kind: 'arr', items })),
    fc
      .uniqueArray(fc.tuple(key, tie('node')), { maxLength: 4, selector: (e) => e[0] })
      .map((entries): Src => ({ kind: 'obj', entries })),
  ),
})).node;

/**
 * A tree that is an object or an array: a client value toolproof moves as a whole (a tool, a
 * schema). A bare number moved into a container toolproof built is written as JSON.stringify
 * writes it (module comment of lossless-json.ts), except a top-level member.
 */
export const container = src.filter((s) => s.kind === 'arr' || s.kind === 'obj');

/** The tree as JSON text, numbers as written; `ws` (cycled) between tokens when given. */
export function print(s: Src, ws: readonly string[] = []): string {
  let n = 0;
  const w = () => (ws.length === 0 ? '' : ws[n++ % ws.length]!);
  const go = (x: Src): string => {
    switch (x.kind) {
      case 'num':
      case 'lit':
        return x.text;
      case 'str':
        return JSON.stringify(x.value);
      case 'arr':
        return `[${w()}${x.items.map((i) => `${go(i)}${w()}`).join(`,${w()}`)}]`;
      case 'obj':
        return `{${w()}${x.entries.map(([k, v]) => `${JSON.stringify(k)}${w()}:${w()}${go(v)}${w()}`).join(`,${w()}`)}}`;
    }
  };
  return go(s);
}

/** Tokens of JSON text: strings decoded, numbers as written, punctuation; whitespace dropped. */
export function tokens(json: string): unknown[] {
  const re = /\s*("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|[{}[\],:]|true|false|null)/y;
  const out: unknown[] = [];
  for (let m = re.exec(json); m !== null; m = re.exec(json)) {
    const t = m[1]!;
    out.push(t.startsWith('"') ? { s: JSON.parse(t) as string } : t);
    if (re.lastIndex >= json.length) break;
  }
  return out;
}
