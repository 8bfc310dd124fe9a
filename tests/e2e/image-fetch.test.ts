/**
 * An image URL the backend can no longer fetch (an expired signed URL): both backends fetch a
 * remote image_url themselves and refuse the whole request when the fetch fails (llama-server's
 * 400 "Failed to download image", vLLM's 422 "Failed to fetch media from URL: HTTP 403 error
 * (parameter=image_url, value=<url>)"). The agent sends that URL again on every later turn, so
 * relaying the refusal ended the session. toolproof sends the request once more with the image
 * as a note, remembers the URL, and later turns go with the same note from the start, their
 * messages extending the first turn's byte for byte. Through the real server and SDKs against the
 * simulator as both backends, chat and Messages, streamed and not; and as old vLLM, whose bare
 * 500 "Internal Server Error" any crash answers too: believed only once the request without the
 * remote images is answered.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import { messagesImage } from '../support/images.js';

type Obj = Record<string, unknown>;
const EXPIRED = 'https://expired.example/shots/a.png?X-Amz-Signature=abc';
const FRESH = 'https://cdn.example/shots/b.png';
const NOTE = '[image not available: a.png, size unknown; the model server could not fetch its URL';

// old vLLM (before its 422): the fetch's exception uncaught, a bare 500 "Internal Server Error"
const BACKENDS = [
  { name: 'vllm', personality: 'vllm', bare: false },
  { name: 'llama-server', personality: 'llama-server', bare: false },
  { name: 'old vllm (a bare 500)', personality: 'vllm', bare: true },
] as const;

for (const { name, personality, bare } of BACKENDS)
  describe(`an image URL ${name} cannot fetch`, () => {
    let stack: Stack;
    let anthropic: Anthropic;
    beforeAll(async () => {
      stack = await startStack({
        sim: {
          personality,
          vision: true,
          unreachableImageHosts: ['expired.example'],
          bareImageFetchError: bare,
        },
        file: { defaults: { vision: true } },
      });
      anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
    });
    afterAll(() => stack.close());

    const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

    /** One turn on `door`; returns the answer as history items. */
    async function turn(door: 'chat' | 'messages', history: Obj[], stream: boolean): Promise<Obj[]> {
      if (door === 'chat') {
        const params = { model: 'sim', messages: history } as never;
        const c = stream
          ? await stack.client.chat.completions.stream(params).finalChatCompletion()
          : await stack.client.chat.completions.create(params);
        return [{ role: 'assistant', content: c.choices[0]!.message.content }];
      }
      const params = { model: 'sim', max_tokens: 100, messages: history } as never;
      const m = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      return [{ role: 'assistant', content: m.content }];
    }

    const first = (door: 'chat' | 'messages'): Obj =>
      door === 'chat'
        ? {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare.' },
              { type: 'image_url', image_url: { url: EXPIRED } },
            ],
          }
        : {
            role: 'user',
            content: [{ type: 'text', text: 'Compare.' }, messagesImage({ url: EXPIRED })],
          };

    for (const door of ['chat', 'messages'] as const)
      for (const stream of [false, true])
        it(`${door}${stream ? ' streamed' : ''}: three turns answered, the note the same each turn`, async () => {
          stack.sim.reset();
          const history: Obj[] = [first(door)];
          const sent: string[] = [];
          for (let t = 1; t <= 3; t++) {
            const before = upstream().length;
            history.push(...(await turn(door, history, stream)));
            const attempts = upstream().slice(before);
            // refused once on the session's first turn (this backend's memory is per test: reset
            // clears the simulator only, so later tests go with the note from their first turn)
            expect(attempts.length).toBeLessThanOrEqual(t === 1 ? 2 : 1);
            const last = attempts.at(-1)!.rawBody;
            expect(last).toContain(NOTE);
            expect(last).not.toContain('expired.example');
            sent.push(last);
            // a new image on a host that answers goes as it is
            history.push(
              door === 'chat'
                ? { role: 'user', content: [{ type: 'image_url', image_url: { url: `${FRESH}?t=${t}` } }] }
                : { role: 'user', content: [messagesImage({ url: `${FRESH}?t=${t}` })] },
            );
          }
          expect(sent[2]).toContain(`${FRESH}?t=2`);
          for (const k of [1, 2]) expect(prefixBreak(sent[0]!, sent[k]!)).toBeNull();
        });

    it('the refusal was routed around once, and counted', async () => {
      const text = await (await fetch(`${stack.origin}/metrics`)).text();
      expect(text).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="image-fetch-refused"\} 1$/m);
      expect(text).toMatch(/toolproof_degraded_content_total\{[^}]*kind="image-unfetched"\} [1-9]/);
    });
  });

describe('old vLLM: a bare 500 is believed only when the request without the images is answered', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      sim: {
        personality: 'vllm',
        vision: true,
        unreachableImageHosts: ['expired.example'],
        bareImageFetchError: true,
      },
      file: { defaults: { vision: true } },
    });
  });
  afterAll(() => stack.close());
  const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
  const messages = [
    {
      role: 'user' as const,
      content: [
        { type: 'text' as const, text: 'Look.' },
        { type: 'image_url' as const, image_url: { url: EXPIRED } },
      ],
    },
  ];

  it('the retry failing too: its error relayed, the URL not remembered', async () => {
    // the retry (the image as its note) answered with a 500 of its own: a crash, not the image
    const scenario = JSON.stringify({
      error: { status: 500, message: 'CUDA error: an illegal memory access' },
    });
    const err = await stack.client.chat.completions
      .create({ model: 'sim', messages }, { headers: { 'x-sim-scenario': scenario } })
      .catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(500);
    expect(upstream()).toHaveLength(2);
    expect(upstream()[1]!.rawBody).toContain(NOTE);
    // not learnt: the next turn tries the image again
    stack.sim.reset();
    await stack.client.chat.completions.create({ model: 'sim', messages });
    expect(upstream()).toHaveLength(2);
    expect(upstream()[0]!.rawBody).toContain(EXPIRED);
    // now learnt: it was answered without it
    stack.sim.reset();
    await stack.client.chat.completions.create({ model: 'sim', messages });
    expect(upstream()).toHaveLength(1);
    expect(upstream()[0]!.rawBody).toContain(NOTE);
  });

  it('a bare 500 on a request with no remote image is relayed, never retried', async () => {
    const BARE_500 = JSON.stringify({
      error: { status: 500, message: 'Internal Server Error', plain: true },
    });
    stack.sim.reset();
    const err = await stack.client.chat.completions
      .create(
        {
          model: 'sim',
          messages: [
            {
              role: 'user',
              content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }],
            },
          ],
        },
        { headers: { 'x-sim-scenario': BARE_500 } },
      )
      .catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(500);
    expect(upstream()).toHaveLength(1);
  });
});
