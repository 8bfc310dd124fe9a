/**
 * A YAML key named `default`, the name every flat key (TOOLPROOF_API_KEYS, server.apiKeys)
 * carries. The capture, the inspector's owner filter, admission and the per-key metrics know a
 * key by its name: a named key called `default` (inspect: own, held to one model) read every flat
 * key's prompts and answers in the inspector, as its own. Now the name is refused where the keys
 * are read, the YAML's and the keys file's alike, so no configuration holds two owners of one
 * name.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

const FLAT = 'sk-flat-default-0001';
const NAMED = 'sk-named-default-0002';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

describe('a key named default', () => {
  it("is refused: with it a named key read every flat key's requests in the inspector", async () => {
    const start = () =>
      startStack({
        env: { TOOLPROOF_API_KEYS: FLAT },
        file: { keys: [{ name: 'default', key: NAMED, models: ['other-model'] }] },
      });
    let started: Stack | Error;
    try {
      started = await start();
    } catch (err) {
      started = err as Error;
    }
    if (!(started instanceof Error)) {
      stack = started;
      // What the configuration allowed: the flat key's prompt, then the named key's inspector.
      const res = await fetch(`${stack.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${FLAT}` },
        body: JSON.stringify({
          model: 'sim',
          messages: [{ role: 'user', content: 'the flat key private prompt' }],
          tools: [weatherTool],
        }),
      });
      expect(res.status).toBe(200);
      const seen = await fetch(`${stack.origin}/inspect/api/requests`, {
        headers: { authorization: `Bearer ${NAMED}` },
      });
      const body = (await seen.json()) as { requests: unknown[] };
      expect(body.requests, 'the named key "default" reads the flat key\'s requests').toEqual([]);
    }
    expect(started).toBeInstanceOf(ConfigError);
    expect((started as Error).message).toContain('"default"');
  });

  it('is refused in the keys file too, and with no flat keys (admission read it as a flat key)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-keys-'));
    const file = join(dir, 'keys.yaml');
    writeFileSync(file, `- name: default\n  key: ${NAMED}\n`);
    expect(() =>
      loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9', TOOLPROOF_KEYS_FILE: file }),
    ).toThrow(/"default"/);
    expect(() =>
      loadConfig(
        { TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9' },
        { keys: [{ name: 'default', key: NAMED }] },
      ),
    ).toThrow(/"default"/);
    // another name is fine
    expect(
      loadConfig(
        { TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9' },
        { keys: [{ name: 'defaults', key: NAMED }] },
      ).keys,
    ).toHaveLength(1);
  });
});
