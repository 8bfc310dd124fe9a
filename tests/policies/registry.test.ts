import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { POLICIES } from '../../policies/registry.js';

const POLICY_NAMES = POLICIES.map((p) => p.name);

const here = dirname(fileURLToPath(import.meta.url));

describe('policy registry', () => {
  it('has stable kebab-case unique names', () => {
    for (const name of ['history-repair', 'normalize-tool-calls', 'force-tool-use', 'corrective-retry']) {
      expect(POLICY_NAMES).toContain(name);
    }
    expect(new Set(POLICY_NAMES).size).toBe(POLICY_NAMES.length);
    for (const n of POLICY_NAMES) expect(n).toMatch(/^[a-z]+(-[a-z]+)*$/);
  });

  it('orders the pipeline: request history-repair -> force-tool-use; response normalize -> force -> corrective', () => {
    // Each side runs the one table in order, skipping policies without a hook for it.
    expect(POLICIES.filter((p) => p.onRequest).map((p) => p.name)).toEqual([
      'documents',
      'images',
      'tool-result-cap',
      'history-repair',
      'force-tool-use',
    ]);
    const response = POLICIES.filter((p) => p.onResponse).map((p) => p.name);
    expect(response).toEqual([
      'normalize-tool-calls',
      'leak-recovery',
      'force-tool-use',
      'client-constraints',
      'corrective-retry',
    ]);
    expect(POLICIES.filter((p) => p.createStreamHook).map((p) => p.name)).toEqual(response);
  });

  it('every policy has a test file, and all but the opt-in ones are enabled by default settings', () => {
    // images acts for a model that cannot see (vision: false), tool-result-cap with maxToolResultTokens.
    const optIn = new Set(['images', 'tool-result-cap']);
    const root = join(here, '..');
    const tests = (readdirSync(root, { recursive: true }) as string[]).map((f) =>
      relative(root, join(root, f)),
    );
    for (const p of POLICIES) {
      expect(p.enabled(DEFAULT_MODEL_SETTINGS)).toBe(!optIn.has(p.name));
      expect(tests.some((f) => f.endsWith(`${p.name}.test.ts`))).toBe(true);
    }
    expect(readdirSync(join(here, '../../policies'))).toContain('README.md');
  });
});
