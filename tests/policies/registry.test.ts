import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import {
  getPolicy,
  POLICIES,
  POLICY_NAMES,
  REQUEST_POLICIES,
  RESPONSE_POLICIES,
} from '../../policies/registry.js';

const here = dirname(fileURLToPath(import.meta.url));

describe('policy registry', () => {
  it('has stable kebab-case unique names', () => {
    for (const name of ['history-repair', 'normalize-tool-calls', 'force-tool-use', 'corrective-retry']) {
      expect(POLICY_NAMES).toContain(name);
    }
    expect(new Set(POLICY_NAMES).size).toBe(POLICY_NAMES.length);
    for (const n of POLICY_NAMES) expect(n).toMatch(/^[a-z]+(-[a-z]+)*$/);
    expect(getPolicy('force-tool-use')?.name).toBe('force-tool-use');
    expect(getPolicy('nope')).toBeUndefined();
  });

  it('orders the pipeline: request history-repair -> force-tool-use; response normalize -> force -> corrective', () => {
    const order = (list: readonly { name: string }[], names: string[]) =>
      list.map((p) => p.name).filter((n) => names.includes(n));
    expect(order(REQUEST_POLICIES, ['history-repair', 'force-tool-use'])).toEqual([
      'history-repair',
      'force-tool-use',
    ]);
    const response = ['normalize-tool-calls', 'leak-recovery', 'force-tool-use', 'corrective-retry'];
    expect(order(RESPONSE_POLICIES, response)).toEqual(response.filter((n) => POLICY_NAMES.includes(n)));
    expect(RESPONSE_POLICIES.at(-1)?.name).toBe('corrective-retry');
    expect(POLICIES.filter((p) => p.onRequest).map((p) => p.name)).toEqual(
      REQUEST_POLICIES.map((p) => p.name),
    );
    expect(POLICIES.filter((p) => p.onResponse).map((p) => p.name)).toEqual(
      RESPONSE_POLICIES.map((p) => p.name),
    );
  });

  it('every policy is enabled by default settings and has a test file', () => {
    const root = join(here, '..');
    const tests = (readdirSync(root, { recursive: true }) as string[]).map((f) =>
      relative(root, join(root, f)),
    );
    for (const p of POLICIES) {
      expect(p.enabled(DEFAULT_MODEL_SETTINGS)).toBe(true);
      expect(tests.some((f) => f.endsWith(`${p.name}.test.ts`))).toBe(true);
    }
    expect(readdirSync(join(here, '../../policies'))).toContain('README.md');
  });
});
