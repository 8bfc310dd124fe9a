/**
 * server/ knows no policy by name: what an effect means for the trace and metrics is declared by
 * its policy (Policy.describeEffect), and what the server needs from a policy is a property of the
 * Policy contract, so a new policy touches policies/ only. A source scan over server/**.ts for
 * the registered names as string literals and for imports of a policy's own module.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { POLICIES } from '../../policies/registry.js';

const root = join(import.meta.dirname, '../..');
const serverDir = join(root, 'server');

function sources(): string[] {
  return readdirSync(serverDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(serverDir, f));
}

const reEscape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A wire word that is also a policy's name, where server/ means the word: OpenRouter's
 * `input_modalities` value "audio" in the model list is not the audio policy.
 */
const WIRE_WORDS: ReadonlyArray<{ file: string; line: RegExp }> = [
  { file: 'server/routes/models.ts', line: /input_modalities: \[/ },
];

describe('server/ names no policy', () => {
  it('scans a non-empty tree and the whole registry', () => {
    expect(sources().length).toBeGreaterThan(20);
    expect(POLICIES.length).toBeGreaterThanOrEqual(6);
  });

  for (const { name } of POLICIES) {
    it(`no server/ file names '${name}'`, () => {
      const literal = new RegExp(`(['"\`])${reEscape(name)}\\1`);
      const ownModule = new RegExp(`policies/${reEscape(name)}(?:\\.js|/)`);
      const hits: string[] = [];
      for (const file of sources()) {
        const lines = readFileSync(file, 'utf8').split('\n');
        lines.forEach((line, i) => {
          const where = relative(root, file);
          if (WIRE_WORDS.some((w) => w.file === where && w.line.test(line)) && !ownModule.test(line)) return;
          if (literal.test(line) || ownModule.test(line)) hits.push(`${where}:${i + 1}: ${line.trim()}`);
        });
      }
      expect(hits).toEqual([]);
    });
  }
});
