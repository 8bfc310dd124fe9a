/**
 * Coverage ratchet for the cases imported from the peers' parser test suites (vLLM, SGLang,
 * llama.cpp, Ollama, vllm-mlx). The number of imported cases per source only grows: raise the floor below when
 * you import more, never lower it. Every case where toolproof deliberately disagrees with the
 * peer carries its reason and is listed in parsers/disagreements.json (data, read here; the
 * README keeps a short index).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadFixtures } from './fixtures.js';

const FLOOR: Record<string, number> = {
  'vllm-project/vllm': 1089,
  'sgl-project/sglang': 339,
  'ggml-org/llama.cpp': 394,
  'ollama/ollama': 290,
  'waybarrios/vllm-mlx': 165,
};

const README = readFileSync(
  join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'parsers', 'README.md'),
  'utf8',
);
/** The deliberate disagreements, one entry per case: its source (or name), family and reason. */
const DISAGREEMENTS = JSON.parse(
  readFileSync(
    join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'parsers', 'disagreements.json'),
    'utf8',
  ),
) as Array<{ source: string; family: string; reason: string }>;
const cases = loadFixtures().flatMap(({ file, cases }) => cases.map((c) => ({ file, c })));
// Cases taken from a peer's test suite name it as "owner/repo path"; cases built from public
// issue threads (the improvised family) name a URL and are not peer-suite imports.
const imported = cases.filter(({ c }) => c.source !== undefined && !c.source.startsWith('http'));

describe('peer suites imported as fixtures', () => {
  it('keeps the number of imported cases per source at or above the floor', () => {
    const counts: Record<string, number> = {};
    for (const { c } of imported) {
      const repo = c.source!.split(' ')[0]!;
      counts[repo] = (counts[repo] ?? 0) + 1;
    }
    console.log(`[parsers] imported peer cases: ${JSON.stringify(counts)}`);
    for (const [repo, floor] of Object.entries(FLOOR))
      expect(counts[repo] ?? 0).toBeGreaterThanOrEqual(floor);
  });

  it('names a known source repository and a test file for every imported case', () => {
    for (const { file, c } of imported) {
      const [repo, path] = c.source!.split(' ');
      expect(Object.keys(FLOOR), `${file}: ${c.name}`).toContain(repo);
      // a test folder (Python and C++ suites) or a Go test file beside its package (Ollama)
      expect(path ?? '', `${file}: ${c.name}`).toMatch(/^(tests?\/|[\w/.-]+_test\.go::)/);
    }
  });

  it("keeps parsers/README.md's per-source table equal to the fixtures (cases per test file)", () => {
    const perFile = new Map<string, Map<string, number>>();
    for (const { c } of imported) {
      const [repo, rest] = [c.source!.split(' ')[0]!, c.source!.slice(c.source!.indexOf(' ') + 1)];
      const path = rest.split('::')[0]!.split(' ')[0]!;
      const files = perFile.get(repo) ?? new Map<string, number>();
      files.set(path, (files.get(path) ?? 0) + 1);
      perFile.set(repo, files);
    }
    for (const repo of Object.keys(FLOOR)) {
      const files = perFile.get(repo) ?? new Map<string, number>();
      const total = [...files.values()].reduce((a, b) => a + b, 0);
      const row = README.split('\n').find((l) => l.startsWith(`| ${repo} | `)) ?? '';
      expect(row, repo).toContain(`| ${repo} | ${total} | `);
      for (const [path, n] of files) expect(row, `${repo} ${path}`).toContain(`\`${path}\` (${n})`);
    }
  });

  it('lists every deliberate disagreement in parsers/disagreements.json', () => {
    const listed = new Set(DISAGREEMENTS.map((d) => d.source));
    const missing = cases
      .filter(({ c }) => c.disagreement !== undefined)
      .filter(({ c }) => !listed.has(c.source ?? c.name))
      .map(({ file, c }) => `${file}: ${c.source ?? c.name}`);
    expect(missing).toEqual([]);
  });

  it('lists nothing stale in parsers/disagreements.json, each with its family and a reason', () => {
    const families = new Map<string, string>();
    for (const { file, c } of cases) if (c.disagreement !== undefined) families.set(c.source ?? c.name, file);
    for (const d of DISAGREEMENTS) {
      expect(families.has(d.source), d.source).toBe(true);
      expect(d.reason.length, d.source).toBeGreaterThan(0);
    }
    expect(new Set(DISAGREEMENTS.map((d) => d.source)).size).toBe(DISAGREEMENTS.length);
  });
});
