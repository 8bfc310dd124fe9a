/**
 * The items other workers hold, placed in a Responses request (TOOLPROOF_WORKERS=2,
 * server/front-doors/responses/gather.ts), count against the body limit with the items the
 * serving worker resolves itself and the conversation it continues, as one worker counts them.
 * They counted apart, each up to the limit: under a 64 KiB limit, two 40 KB items, one on each
 * worker (or a conversation of 40 KB on one and an item of 40 KB on the other) went upstream
 * where one worker answers a 413. The real process and the real openai SDK, each client pinned to one worker by
 * its connection; whichever worker the request reaches, and whichever item it names first.
 */
import type OpenAI from 'openai';
import type { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterOnYaml } from '../support/toolproof-process.js';
import { answeredOnEach, sdkThrough } from '../support/worker-clients.js';

const cluster = clusterOnYaml(
  {
    personality: 'vllm',
    // A short question 'big a' is answered with 40 KB of a's: an item of about 40 KB.
    scenario: (turn) => ({
      say: turn.lastUserText.startsWith('big ') ? turn.lastUserText.slice(4).repeat(40_000) : 'ok',
    }),
  },
  (simUrl) => `
server:
  bodyLimitBytes: 65536
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
keys:
  - { name: alice, key: sk-alice-0123456789 }
`,
);

const sdkOn = (client: Client) => sdkThrough(cluster.origin, client, 'sk-alice-0123456789');

let here: Client;
let there: Client;
let mine: OpenAI.Responses.Response;
let theirs: OpenAI.Responses.Response;

beforeAll(async () => {
  ({ here, there, mine, theirs } = await answeredOnEach(cluster.origin, 'sk-alice-0123456789', [
    'big a',
    'big b',
  ]));
}, 90_000);
afterAll(async () => {
  await here?.close();
  await there?.close();
});

const status = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (err: { status?: number }) => err.status ?? 0,
  );

describe('items placed from another worker count with the rest against the body limit', () => {
  it('two 40 KB items, one on each worker, under a 64 KiB limit: a 413 from either worker, either order', async () => {
    const a = mine.output[0]!.id!;
    const b = theirs.output[0]!.id!;
    // Each alone fits.
    expect(
      await status(sdkOn(here).responses.create({ model: 'm', input: [{ type: 'item_reference', id: b }] })),
    ).toBe(200);
    for (const client of [here, there])
      for (const refs of [
        [a, b],
        [b, a],
      ])
        expect(
          await status(
            sdkOn(client).responses.create({
              model: 'm',
              input: [
                ...refs.map((id) => ({ type: 'item_reference' as const, id })),
                { role: 'user', content: 'go' },
              ],
            }),
          ),
          `from worker ${client === here ? 'here' : 'there'}, ${refs[0] === a ? 'a' : 'b'} first`,
        ).toBe(413);
  }, 60_000);

  it("a conversation continued on one worker and the other's item: a 413", async () => {
    const b = theirs.output[0]!.id!;
    // The conversation alone fits.
    expect(
      await status(sdkOn(there).responses.create({ model: 'm', previous_response_id: mine.id, input: 'go' })),
    ).toBe(200);
    for (const client of [here, there])
      expect(
        await status(
          sdkOn(client).responses.create({
            model: 'm',
            previous_response_id: mine.id,
            input: [
              { type: 'item_reference', id: b },
              { role: 'user', content: 'go' },
            ],
          }),
        ),
      ).toBe(413);
  }, 60_000);
});
