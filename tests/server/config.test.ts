import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_PORT, loadConfig } from '../../server/config.js';
import { nodeEntry } from '../support/toolproof-process.js';

function yamlFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolproof-config-'));
  const path = join(dir, 'toolproof.yaml');
  writeFileSync(path, text);
  return path;
}

describe('config', () => {
  it('no upstream configured -> simulator mode, defaults named', () => {
    const c = loadConfig({});
    expect(c.simulator).toBe(true);
    expect(c.port).toBe(DEFAULT_PORT);
    expect(c.port).not.toBe(8000);
    expect(c.port).not.toBe(8080);
    expect(c.bodyLimitBytes).toBeGreaterThanOrEqual(20 * 1024 * 1024);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads env: upstream list, keys, timeouts', () => {
    const c = loadConfig({
      TOOLPROOF_UPSTREAM_URL: 'http://a:8000/v1, http://b:8000/v1/',
      TOOLPROOF_API_KEYS: 'k1-aaaaaaaa,k2-bbbbbbbb',
      TOOLPROOF_UPSTREAM_API_KEY: 'up',
      TOOLPROOF_IDLE_TIMEOUT_MS: '1234',
    });
    expect(c.simulator).toBe(false);
    expect(c.defaultUpstream?.urls).toEqual(['http://a:8000/v1', 'http://b:8000/v1']);
    expect(c.defaultUpstream?.apiKey).toBe('up');
    expect(c.apiKeys).toEqual(['k1-aaaaaaaa', 'k2-bbbbbbbb']);
    expect(c.timeouts.idleMs).toBe(1234);
  });

  it('YAML maps models to upstreams with per-model settings over defaults', () => {
    const path = yamlFile(`
defaults:
  maxRetries: 0
models:
  qwen:
    upstream: [http://gpu1:8000/v1, http://gpu2:8000/v1]
    upstreamModel: Qwen/Qwen3-8B
    parsers: [hermes]
    historyRepair:
      nineCharIds: true
  llama:
    upstream: http://cpu:8080/v1
    forceToolUse: false
`);
    const c = loadConfig({ TOOLPROOF_CONFIG: path });
    expect(c.models.qwen!.upstream.urls).toHaveLength(2);
    expect(c.models.qwen!.upstreamModel).toBe('Qwen/Qwen3-8B');
    expect(c.models.qwen!.settings.parsers).toEqual(['hermes']);
    expect(c.models.qwen!.settings.maxRetries).toBe(0);
    expect(c.models.qwen!.settings.historyRepair.nineCharIds).toBe(true);
    expect(c.models.qwen!.settings.historyRepair.enabled).toBe(true);
    expect(c.models.llama!.settings.forceToolUse).toBe(false);
    expect(c.models.llama!.settings.forceToolUse).toBe(false);
  });

  it.each([
    ['unknown top-level key', 'upstreams:\n  url: http://x/v1\n', 'unknown key "upstreams"'],
    [
      'unknown model key',
      'models:\n  m:\n    upstream: http://x/v1\n    forceToolUse: true\n    retries: 2\n',
      'models.m.retries',
    ],
    [
      'wrong type',
      'models:\n  m:\n    upstream: http://x/v1\n    forceToolUse: "yes"\n',
      'models.m.forceToolUse',
    ],
    ['bad enum', 'models:\n  m:\n    upstream: http://x/v1\n    recovery: sometimes\n', 'models.m.recovery'],
    ['bad url', 'models:\n  m:\n    upstream: gpu:8000\n', 'models.m.upstream'],
    [
      'unknown parser',
      'models:\n  m:\n    upstream: http://x/v1\n    parsers: [hermes, nope-format]\n',
      'nope-format',
    ],
    ['not yaml', 'models: [', 'not valid YAML'],
  ])('invalid config fails naming the key: %s', (_label, text, needle) => {
    const path = yamlFile(text);
    expect(() => loadConfig({ TOOLPROOF_CONFIG: path })).toThrow(ConfigError);
    expect(() => loadConfig({ TOOLPROOF_CONFIG: path })).toThrow(needle);
  });

  it('bad env values fail naming the variable', () => {
    expect(() => loadConfig({ TOOLPROOF_PORT: 'eighty' })).toThrow('TOOLPROOF_PORT');
    expect(() => loadConfig({ TOOLPROOF_UPSTREAM_URL: 'not a url' })).toThrow('TOOLPROOF_UPSTREAM_URL');
    expect(() => loadConfig({ TOOLPROOF_CONFIG: '/nonexistent/toolproof.yaml' })).toThrow('TOOLPROOF_CONFIG');
  });

  // What the flat keys see in the inspector (docs/inspect.md#keys): all alone, own beside named keys.
  it("the flat keys' inspector scope: all alone, own beside named keys, TOOLPROOF_API_KEYS_INSPECT over both", () => {
    const flat = (env: Record<string, string>) =>
      loadConfig(env)
        .keys.filter((k) => k.name === 'default')
        .map((k) => k.inspect);
    expect(flat({ TOOLPROOF_API_KEYS: 'sk-flat-0123456789' })).toEqual(['all']);
    const named = yamlFile('keys:\n  - { name: alice, key: sk-alice-0123456789 }\n');
    expect(flat({ TOOLPROOF_API_KEYS: 'sk-flat-0123456789', TOOLPROOF_CONFIG: named })).toEqual(['own']);
    expect(
      flat({
        TOOLPROOF_API_KEYS: 'sk-flat-0123456789',
        TOOLPROOF_CONFIG: named,
        TOOLPROOF_API_KEYS_INSPECT: 'ALL',
      }),
    ).toEqual(['all']);
    expect(flat({ TOOLPROOF_API_KEYS: 'sk-flat-0123456789', TOOLPROOF_API_KEYS_INSPECT: 'own' })).toEqual([
      'own',
    ]);
    expect(() =>
      loadConfig({ TOOLPROOF_API_KEYS: 'sk-flat-0123456789', TOOLPROOF_API_KEYS_INSPECT: 'some' }),
    ).toThrow('TOOLPROOF_API_KEYS_INSPECT must be own or all');
    const bad = yamlFile('server:\n  apiKeys: [sk-flat-0123456789]\n  apiKeysInspect: mine\n');
    expect(() => loadConfig({ TOOLPROOF_CONFIG: bad })).toThrow('apiKeysInspect');
  });

  it('the process refuses to start on invalid config, with the bad key in its message', () => {
    const path = yamlFile('models:\n  m:\n    upstream: http://x/v1\n    bogusKey: 1\n');
    const r = spawnSync(process.execPath, nodeEntry('server/main.ts'), {
      env: { ...process.env, TOOLPROOF_CONFIG: path, TOOLPROOF_PORT: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('models.m.bogusKey');
  });
});

describe('model labels for metrics', () => {
  it('the first N distinct unmapped model names keep their label, later ones share "other"', async () => {
    const { ModelLabels } = await import('../../server/routing.js');
    const labels = new ModelLabels(2);
    expect(labels.label('a')).toBe('a');
    expect(labels.label('b')).toBe('b');
    expect(labels.label('c')).toBe('other');
    expect(labels.label('a')).toBe('a');
  });
});

describe('model labels through the server', () => {
  it('unmapped names keep their own label once the upstream lists them or answers them; junk takes no slot', async () => {
    const { startStack } = await import('./stack.js');
    const stack = await startStack({ sim: { scenario: 'prose' }, served: [] });
    stack.app.toolproof.modelLabels = new (await import('../../server/routing.js')).ServedModelLabels(4);
    const ask = (model: string) =>
      stack.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    // A first request of a name nobody vouched for counts as "other"; its success vouches for it.
    await ask('m-a');
    await ask('m-a');
    // The answered bucket is half the cap: m-b fills it, m-c stays "other".
    for (const model of ['m-b', 'm-c', 'm-b', 'm-c']) await ask(model);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(
      /toolproof_requests_total\{model="m-a",route="chat\/completions",status="200",api="chat"\} 1/,
    );
    expect(metrics).toMatch(
      /toolproof_requests_total\{model="m-b",route="chat\/completions",status="200",api="chat"\} 1/,
    );
    expect(metrics).toMatch(
      /toolproof_requests_total\{model="other",route="chat\/completions",status="200",api="chat"\} 4/,
    );
    expect(metrics).not.toContain('model="m-c"');
    await stack.close();
  });
});
