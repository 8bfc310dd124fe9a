/**
 * Reload with TOOLPROOF_WORKERS=2 (the real process: server/main.ts in a child): 50
 * streams open on both workers, the YAML changes (a key revoked) and the primary gets SIGHUP;
 * every worker swaps its configuration, the revoked key is refused within a second on fresh
 * connections (whichever worker takes them), and none of the 50 streams breaks: each ends whole.
 */
import { writeFileSync } from 'node:fs';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { clusterOnYaml, freshRequest, hiChat } from '../../support/toolproof-process.js';

const WORDS = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
const yaml = (simUrl: string, keys: string[]) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
keys:
${keys.map((k) => `  - name: ${k}\n    key: sk-${k}-0123456789`).join('\n')}
`;

// Every answer streams 30 words, 40 ms apart: about 1.2 s per stream.
const cluster = clusterOnYaml(
  { personality: 'vllm', scenario: [{ say: WORDS, chunkDelayMs: 40 }] },
  (simUrl) => yaml(simUrl, ['alice', 'bob']),
);

const status = async (key: string): Promise<number> =>
  (await freshRequest(cluster.origin, { key, body: hiChat('m') })).status;

async function openStream(): Promise<Promise<string>> {
  const client = new Client(cluster.origin);
  const res = await client.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bob-0123456789' },
    body: JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'stream please' }],
    }),
  });
  expect(res.statusCode).toBe(200);
  return res.body.text().finally(() => client.close());
}

describe('reload with two workers', () => {
  it('SIGHUP under 50 open streams breaks none, and a revoked key is refused within a second', async () => {
    const streams = await Promise.all(Array.from({ length: 50 }, () => openStream()));
    writeFileSync(cluster.file, yaml(cluster.sim.url, ['alice']));
    const hup = Date.now();
    cluster.proc.child.kill('SIGHUP');
    // Fresh connections, spread over both workers by the primary: refused once each worker swapped.
    let refusedInARow = 0;
    while (refusedInARow < 6) {
      expect(Date.now() - hup).toBeLessThan(1_000);
      refusedInARow = (await status('bob')) === 401 ? refusedInARow + 1 : 0;
    }
    expect(await status('alice')).toBe(200);
    const bodies = await Promise.all(streams);
    for (const body of bodies) {
      expect(body).toContain('w29');
      expect(body).not.toContain('"error"');
      expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    }
    const reloaded = cluster.proc.lines.filter((l) => l.msg === 'configuration reloaded');
    expect(new Set(reloaded.map((l) => l.pid)).size).toBe(2);
  }, 60_000);
});
