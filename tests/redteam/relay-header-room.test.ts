/**
 * TOOLPROOF_WORKERS=2: a Responses request whose headers are just under node's 16 KB limit,
 * relayed to the worker holding its state (server/worker-relay.ts). The worker it reached took
 * it; the relay adds headers of its own (x-toolproof-relayed-for, the request id, Host), and the
 * owner refused the relayed request with a 431: the same request was a 200 on the worker it
 * reached and a 431 when its state was on the other. Now the private socket's connections have
 * room for what the relay adds; the port clients reach keeps its limit (a request over it is a
 * 431 wherever its state is).
 */
import type { Client, Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { clusterOnYaml } from '../support/toolproof-process.js';
import { sdkThrough, twoWorkers } from '../support/worker-clients.js';

const cluster = clusterOnYaml(
  { personality: 'vllm', scenario: (turn) => ({ say: `said to: ${turn.lastUserText}` }) },
  (simUrl) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
`,
);

const sdkOn = (client: Dispatcher) => sdkThrough(cluster.origin, client);

describe("a relayed request's headers near node's limit", () => {
  it('served as on the worker it reached; over the limit, a 431 either way', async () => {
    const made = async (c: Client) => (await sdkOn(c).responses.create({ model: 'm', input: 'anchor' })).id;
    const { here, there, made: anchor } = await twoWorkers(cluster.origin, made);
    await there.close();
    const send = async (pad: number, previous?: string) => {
      const res = await here.request({
        method: 'POST',
        path: '/v1/responses',
        headers: { 'content-type': 'application/json', 'x-pad': 'a'.repeat(pad) },
        body: JSON.stringify({
          model: 'm',
          input: 'more',
          ...(previous ? { previous_response_id: previous } : {}),
        }),
      });
      await res.body.text();
      return res.statusCode;
    };
    // Just under the limit (the request line and the other headers take the rest): a 200 here.
    let checked = 0;
    for (const pad of [16_200, 16_260, 16_280]) {
      const local = await send(pad);
      if (local !== 200) continue;
      checked++;
      expect(await send(pad, anchor), `x-pad of ${pad} bytes, relayed`).toBe(200);
    }
    expect(checked).toBeGreaterThanOrEqual(2);
    expect(await send(16_400)).toBe(431);
    expect(await send(16_400, anchor)).toBe(431);
    await here.close();
  }, 60_000);
});
