/**
 * The layering the codebase promises (README, "Architecture"): parsers/, policies/ and protocol/
 * are pure and never import server/ or simulator/, and no import cycle exists among the source
 * folders, counting type imports too (scripts/import-cycles.mjs, also runnable by hand).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const FOLDERS = ['server', 'parsers', 'policies', 'protocol', 'simulator', 'cli'];

function cycles(...flags: string[]): { ok: boolean; out: string } {
  try {
    const out = execFileSync(process.execPath, ['scripts/import-cycles.mjs', ...flags, ...FOLDERS], {
      cwd: root,
      encoding: 'utf8',
    });
    return { ok: true, out };
  } catch (err) {
    return { ok: false, out: String((err as { stdout?: unknown }).stdout ?? err) };
  }
}

describe('layering', () => {
  it('has no runtime import cycle', () => {
    const r = cycles();
    expect(r.out).toMatch(/^no runtime import cycle\n(\d+) files/);
    expect(r.ok).toBe(true);
    expect(Number(/(\d+) files/.exec(r.out)?.[1])).toBeGreaterThan(200);
  });

  it('has no import cycle when type imports count too', () => {
    const r = cycles('--types');
    expect(r.out).toMatch(/^no import cycle \(type imports included\)\n/);
    expect(r.ok).toBe(true);
  });

  for (const pure of ['parsers', 'policies', 'protocol']) {
    it(`${pure}/ imports nothing from server/ or simulator/`, () => {
      const dir = join(root, pure);
      const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
      expect(files.length).toBeGreaterThan(5);
      const hits: string[] = [];
      for (const f of files) {
        const src = readFileSync(join(dir, f), 'utf8');
        for (const m of src.matchAll(/from\s+['"]([^'"]+)['"]/g))
          if (/(^|\/)(server|simulator)\//.test(m[1] ?? '') && (m[1] ?? '').startsWith('.'))
            hits.push(`${relative(root, join(dir, f))}: ${m[1]}`);
      }
      expect(hits).toEqual([]);
    });
  }
});
