import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { POLICIES, policySettingsSchema } from '../../policies/registry.js';
import type { Policy } from '../../policies/types.js';

const POLICY_NAMES = POLICIES.map((p) => p.name);

const here = dirname(fileURLToPath(import.meta.url));

const HOOKS = ['onRequest', 'onResponse', 'onUpstreamError', 'createStreamHook'] as const;

describe('policy registry: the contract', () => {
  it('has stable kebab-case unique names', () => {
    for (const name of ['history-repair', 'normalize-tool-calls', 'force-tool-use', 'corrective-retry']) {
      expect(POLICY_NAMES).toContain(name);
    }
    expect(new Set(POLICY_NAMES).size).toBe(POLICY_NAMES.length);
    for (const n of POLICY_NAMES) expect(n).toMatch(/^[a-z]+(-[a-z]+)*$/);
  });

  it('every policy has at least one hook, and a stream hook only beside a response hook', () => {
    for (const p of POLICIES as readonly Policy[]) {
      expect(
        HOOKS.some((h) => typeof p[h] === 'function'),
        p.name,
      ).toBe(true);
      if (p.createStreamHook) expect(typeof p.onResponse, p.name).toBe('function');
      expect(typeof p.enabled(DEFAULT_MODEL_SETTINGS), p.name).toBe('boolean');
    }
  });

  it('keeps the order the pipeline relies on where two policies touch the same thing', () => {
    const order = (hook: (typeof HOOKS)[number]) =>
      (POLICIES as readonly Policy[]).filter((p) => p[hook]).map((p) => p.name);
    const precedes = (list: string[], a: string, b: string) =>
      expect(list.indexOf(a), `${a} before ${b}`).toBeLessThan(list.indexOf(b));
    const request = order('onRequest');
    precedes(request, 'history-repair', 'force-tool-use');
    // Content is degraded before history repair reads it.
    precedes(request, 'documents', 'history-repair');
    precedes(request, 'images', 'history-repair');
    precedes(request, 'tool-result-cap', 'history-repair');
    // Last on the request side: it sees every other rewrite (upstream name, stream usage).
    expect(request.at(-1)).toBe('upstream-request');
    const response = order('onResponse');
    precedes(response, 'normalize-tool-calls', 'leak-recovery');
    precedes(response, 'leak-recovery', 'force-tool-use');
    precedes(response, 'force-tool-use', 'client-constraints');
    expect(response.at(-1)).toBe('corrective-retry');
    expect(order('createStreamHook')).toEqual(response);
  });

  it('every policy has a test file (a policy may be off by default)', () => {
    const root = join(here, '..');
    const tests = (readdirSync(root, { recursive: true }) as string[]).map((f) =>
      relative(root, join(root, f)),
    );
    for (const p of POLICIES)
      expect(
        tests.some((f) => f.endsWith(`${p.name}.test.ts`)),
        p.name,
      ).toBe(true);
    expect(readdirSync(join(here, '../../policies'))).toContain('README.md');
  });

  it('each setting is declared by one policy, and every declared key has a default', () => {
    const schema = policySettingsSchema();
    for (const key of Object.keys(schema)) expect(Object.keys(DEFAULT_MODEL_SETTINGS)).toContain(key);
    expect(() => policySettingsSchema([...POLICIES, ...POLICIES])).toThrow(/declared by two policies/);
  });
});
