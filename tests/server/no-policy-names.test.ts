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
          if (literal.test(line) || ownModule.test(line))
            hits.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
        });
      }
      expect(hits).toEqual([]);
    });
  }
});
