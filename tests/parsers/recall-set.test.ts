/**
 * Held-out recall sets (tests/fixtures/recall/*.json): real model outputs whose expectations are
 * the truth a careful reader sees, not what the code reads today, so the conformance suite (which
 * asserts today's reading) does not load them. Recall on them is measured, not asserted:
 * `npx tsx bench/wild.ts tests/fixtures/recall/<file>.json` (docs/recall.md keeps the figures).
 *
 * What holds whatever the recall: every case is well-formed data with a public source, no output
 * without a call is turned into one, and streaming one character at a time equals the whole.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { recoverMessage } from '../../parsers/recover.js';
import { type FixtureCase, optionsFor, streamedByChar } from './fixtures.js';

const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'recall');
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ file: f, cases: JSON.parse(readFileSync(join(DIR, f), 'utf8')) as FixtureCase[] }));

function calls(r: ReturnType<typeof recoverMessage>) {
  return r.calls.map((c) => [c.name, JSON.parse(c.arguments)]);
}

describe('recall sets', () => {
  it('has at least one set', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  for (const { file, cases } of files) {
    describe(file, () => {
      it('names a public source for every case, and each name once', () => {
        const names = new Set<string>();
        for (const c of cases) {
          expect(c.source ?? '', c.name).toMatch(/^https:\/\//);
          expect(names.has(c.name), c.name).toBe(false);
          names.add(c.name);
        }
      });

      it('expects only calls to declared tools, with their required arguments and no others', () => {
        for (const c of cases) {
          const tools = new Map(c.tools.map((t) => [t.name, t.parameters ?? {}]));
          for (const call of c.expect.calls) {
            const schema = tools.get(call.name) as
              | { properties?: Record<string, unknown>; required?: string[] }
              | undefined;
            expect(schema, `${c.name}: ${call.name}`).toBeDefined();
            for (const key of schema?.required ?? []) expect(call.arguments, c.name).toHaveProperty(key);
            for (const key of Object.keys(call.arguments))
              expect(Object.keys(schema?.properties ?? {}), `${c.name}: ${key}`).toContain(key);
          }
        }
      });

      it('turns no output without a call into a call', () => {
        const fabricated = cases
          .filter((c) => c.expect.calls.length === 0)
          .filter(
            (c) =>
              recoverMessage({ content: c.text, reasoning: c.reasoning ?? null }, optionsFor(c)).calls
                .length > 0,
          )
          .map((c) => c.name);
        expect(fabricated).toEqual([]);
      });

      it('reads the same streamed one character at a time as whole', () => {
        for (const c of cases) {
          const whole = recoverMessage({ content: c.text, reasoning: c.reasoning ?? null }, optionsFor(c));
          const streamed = streamedByChar(c);
          expect(calls(streamed), c.name).toEqual(calls(whole));
          expect(streamed.content, c.name).toBe(whole.content);
        }
      });
    });
  }
});
