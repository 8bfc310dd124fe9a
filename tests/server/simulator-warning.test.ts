/**
 * The start-up warning of a toolproof on its built-in simulator says how to leave it. With a
 * TOOLPROOF_CONFIG that names no upstream (a keys-only YAML, the usual way to get there with the
 * file set), it told the user to "set TOOLPROOF_CONFIG", which they had; now it names the file
 * and what it lacks. With no file, it names both settings as before.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { freePort, type Proc, startToolproof } from '../support/toolproof-process.js';

let proc: Proc | undefined;
afterEach(async () => {
  proc?.child.kill('SIGTERM');
  await proc?.exited;
  proc = undefined;
});

const warning = async (env: Record<string, string>): Promise<string> => {
  proc = startToolproof({ TOOLPROOF_PORT: String(await freePort()), TOOLPROOF_LOG_LEVEL: 'info', ...env });
  const line = await proc.waitFor(
    (l) => typeof l.simulator === 'string' && String(l.msg).includes('NO UPSTREAM'),
  );
  return String(line.msg);
};

it('a YAML with keys and no upstream: the warning names the file and what it lacks', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'tp-simwarn-')), 'keys.yaml');
  writeFileSync(file, 'keys:\n  - { name: alice, key: sk-alice-0123456789 }\n');
  const msg = await warning({ TOOLPROOF_CONFIG: file });
  expect(msg).toContain(`TOOLPROOF_CONFIG (${file}) names no upstream`);
  expect(msg).toContain('upstream:');
  expect(msg).not.toMatch(/or TOOLPROOF_CONFIG to use/);
});

it('no file: the warning names both ways to a real model', async () => {
  const msg = await warning({});
  expect(msg).toContain(
    'Set TOOLPROOF_UPSTREAM_URL=http://your-vllm:8000/v1 or TOOLPROOF_CONFIG to use a real model',
  );
});
