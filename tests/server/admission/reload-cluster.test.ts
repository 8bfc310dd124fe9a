/**
 * Reload with TOOLPROOF_WORKERS=2 (the real process: server/main.ts in a child): 50
 * streams open on both workers, the YAML changes (a key revoked) and the primary gets SIGHUP;
 * every worker swaps its configuration, the revoked key is then refused on every fresh
 * connection (whichever worker takes it), and none of the 50 streams breaks: each ends whole.
 */
import { writeFileSync } from 'node:fs';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { clusterOnYaml, freshRequest, hiChat } from '../../support/toolproof-process.js';
import { waitFor } from '../stack.js';

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
  it('SIGHUP under 50 open streams breaks none, and a revoked key is refused once each worker swapped', async () => {
    const streams = await Promise.all(Array.from({ length: 50 }, () => openStream()));
    writeFileSync(cluster.file, yaml(cluster.sim.url, ['alice']));
    cluster.proc.child.kill('SIGHUP');
    // Each worker logs its swap once every later request reads the new configuration: from
    // both, fresh connections (spread over both workers by the primary) refuse the revoked key,
    // every one. (Not a wall-clock second from the signal: a loaded box takes longer to swap.)
    const swapped = () =>
      new Set(cluster.proc.lines.filter((l) => l.msg === 'configuration reloaded').map((l) => l.pid)).size;
    await waitFor(() => swapped() === 2, 20_000);
    for (let k = 0; k < 6; k++) expect(await status('bob')).toBe(401);
    expect(await status('alice')).toBe(200);
    const bodies = await Promise.all(streams);
    for (const body of bodies) {
      expect(body).toContain('w29');
      expect(body).not.toContain('"error"');
      expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    }
  }, 60_000);
});
